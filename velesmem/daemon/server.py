"""uvicorn, with a shutdown that drains: on SIGTERM/SIGINT stop accepting, let in-flight MCP calls
finish, end idle sessions, then stop — and return to the caller, which closes the store."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from velesmem.daemon.app import McpHandle
from velesmem.daemon.tls import TlsFiles
from velesmem.errors import Internal

DRAIN_TIMEOUT_S = 30.0  # longest wait for in-flight calls after SIGTERM/SIGINT
GRACEFUL_CLOSE_S = 5.0  # then uvicorn's own wait for connections to close
DRAIN_POLL_S = 0.02


class _DrainingServer(uvicorn.Server):
    """uvicorn, but a signal first drains in-flight MCP calls, and is not re-raised afterwards
    (so the caller still closes the store cleanly)."""

    def __init__(self, config: uvicorn.Config, handle: McpHandle) -> None:
        super().__init__(config)
        self.handle = handle

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in getattr(self, "servers", []):
            server.close()
        drain = self.handle.drain
        drain.closing = True
        self.handle.runtime.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_TIMEOUT_S
        if drain.in_flight:
            print(f"[velesdb-memory] draining {drain.in_flight} in-flight call(s)…", file=sys.stderr, flush=True)
        while drain.in_flight and loop.time() < deadline:
            await asyncio.sleep(DRAIN_POLL_S)
        await self.handle.terminate_sessions()
        await super().shutdown(sockets)


def run_app(app: Starlette, handle: McpHandle, sock: socket.socket, tls: TlsFiles | None) -> None:
    """Serve ``app`` on the already-bound ``sock`` until a signal; TLS from ``tls`` unless None."""
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_CLOSE_S,
        ssl_certfile=None if tls is None else str(tls.leaf_cert),
        ssl_keyfile=None if tls is None else str(tls.leaf_key),
    )
    server = _DrainingServer(config, handle)
    server.run(sockets=[sock])
    if not server.started:
        raise Internal("the HTTP server failed to start (see the messages above)")

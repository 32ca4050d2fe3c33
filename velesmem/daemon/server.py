"""uvicorn, run our way: guarded connections, a TLS context renewed in place, and an orderly stop.

On SIGTERM/SIGINT: mark the drain first (new calls get a worded 503 while the socket still
listens), end at once every session with no call in flight (GET streams and leaked sessions
included), let in-flight MCP calls finish and connections that just opened send their request (it
is refused in words too), then stop listening, end the remaining sessions, close the
connections (without waiting on clients that never answer TLS close_notify), and return to the
caller, which closes the store.
"""

from __future__ import annotations

import logging

import asyncio
import contextlib
import gc
import importlib.util
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import uvicorn
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from uvicorn.config import STARTUP_FAILURE

from velesmem import limits
from velesmem.daemon.app import McpHandle
from velesmem.daemon.connections import HTTP_PROTOCOL, ConnectionPolicy, ConnectionTable, guarded_protocol
from velesmem.daemon.renewal import LeafRenewer
from velesmem.errors import Internal

log = logging.getLogger("velesmem.daemon")

POLL_S = 0.02


def serving_stack() -> tuple[str, str]:
    """(event loop, HTTP protocol) the daemon serves on here, as uvicorn names them: the loop is
    uvicorn's choice ("auto": uvloop if installed), the protocol ours (``connections``)."""
    return ("uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"), HTTP_PROTOCOL


@dataclass(frozen=True)
class ServeTls:
    """The live server context and what keeps its leaf fresh."""

    context: ssl.SSLContext
    renewer: LeafRenewer


def _say(line: str) -> None:
    """A lifecycle line for the daemon log (through logging, as every message)."""
    log.info(line)


class _DaemonServer(uvicorn.Server):
    """uvicorn with our connection protocol, our TLS context, the leaf renewer, and a shutdown that
    drains before it closes (a signal is not re-raised, so the caller still closes the store)."""

    def __init__(self, config: uvicorn.Config, handle: McpHandle, table: ConnectionTable,
                 tls: ServeTls | None) -> None:
        super().__init__(config)
        self.handle = handle
        self.table = table
        self.tls = tls
        self._renewing: asyncio.Task[None] | None = None

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

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)
        # Everything built so far lives as long as the process: freeze it, so the collections
        # after large bodies (bodies.py) only walk what requests allocated. No collection first:
        # at this point it finds a few hundred unreachable objects (474 measured) and would
        # delay listening by ~80 ms of walking the whole heap. Start-up ran with the collector
        # off (runner.py), which leaves ~8,000 unreachable start-up objects (~1.3 MB) frozen
        # with the rest: cheaper than the collections it saved. From here on it collects.
        gc.freeze()
        gc.enable()
        loop = asyncio.get_running_loop()
        timeout_s = self.table.policy.request_timeout_s

        guarded = guarded_protocol(self.table.policy.protocol)

        def protocol() -> asyncio.Protocol:
            # The guarded classes mix _Guarded into uvicorn's asyncio.Protocol subclasses.
            return cast(asyncio.Protocol, guarded(config=self.config, server_state=self.server_state,
                                                  app_state=self.lifespan.state, table=self.table))

        tls_options: dict[str, Any] = {} if self.tls is None else {
            "ssl": self.tls.context, "ssl_handshake_timeout": timeout_s,
            "ssl_shutdown_timeout": float(limits.HTTP_TLS_SHUTDOWN_SECONDS),
        }
        self.servers = [
            await loop.create_server(protocol, sock=sock, backlog=self.config.backlog, **tls_options)
            for sock in sockets or []
        ]
        if self.tls is not None:
            self._renewing = asyncio.create_task(self.tls.renewer.run(), name="velesmem-leaf-renewal")
        self.started = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        drain = self.handle.drain
        drain.closing = True  # first: from here on a new call is refused in words, not by a closed port
        self.handle.runtime.drain()
        # Sessions with no call in flight end now, their GET streams with them: nothing waits on
        # a stream or a leaked session (the sessions answering a call end after it).
        await self.handle.end_idle_sessions()
        if drain.in_flight:
            _say(f"draining {drain.in_flight} in-flight call(s)…")
        began = loop.time()
        deadline = began + limits.HTTP_DRAIN_SECONDS
        # Connections that just opened or just got an answer may be about to send a request: they
        # get a short quiet spell to have it refused in words, counted from the signal, so clients
        # that reconnect (to the 503) again and again cannot hold the exit.
        quiet_until = began + limits.HTTP_DRAIN_QUIET_SECONDS
        # Polled: the condition mixes a deadline, a counter and the connection table (no one event).
        while loop.time() < deadline and (drain.in_flight or (  # noqa: ASYNC110
            loop.time() < quiet_until and not self.table.settled(loop.time() - limits.HTTP_DRAIN_QUIET_SECONDS)
        )):
            await asyncio.sleep(POLL_S)
        AppStatus.should_exit = True  # only now may sse-starlette end the streams still open
        for server in self.servers:
            server.close()
        if self._renewing is not None:
            self._renewing.cancel()
        await self.handle.terminate_sessions()  # ends GET streams, which would otherwise stay open
        for connection in list(self.server_state.connections):
            connection.shutdown()  # idle ones close now, busy ones after their response
        await self._close_connections(loop.time() + limits.HTTP_CLOSE_SECONDS)
        await self.lifespan.shutdown()

    async def _close_connections(self, deadline: float) -> None:
        """Wait for responses in progress; drop connections that only wait for the client's TLS
        close_notify (an idle client never sends it) once our last bytes are handed over."""
        loop = asyncio.get_running_loop()
        while True:
            connections = list(self.server_state.connections)
            for connection in connections:
                transport = connection.transport
                if transport.is_closing() and _flushed(transport):
                    transport.abort()
            busy = [c for c in connections if not c.transport.is_closing()]
            if not busy and not self.server_state.tasks:
                break
            if loop.time() > deadline:
                for task in list(self.server_state.tasks):
                    task.cancel()
                for connection in connections:
                    connection.transport.abort()
                break
            await asyncio.sleep(POLL_S)
        for server in self.servers:
            await server.wait_closed()


def _flushed(transport: asyncio.BaseTransport) -> bool:
    """Nothing of ours is left in the transport's buffers."""
    try:
        return not transport.get_write_buffer_size()  # type: ignore[attr-defined]
    except AttributeError:  # asyncio already detached the TLS layer: nothing left to send
        return True


def run_app(
    app: Starlette,
    handle: McpHandle,
    sock: socket.socket,
    *,
    tls: ServeTls | None,
    policy: ConnectionPolicy,
    keep_alive_s: float = float(limits.HTTP_KEEP_ALIVE_SECONDS),
) -> None:
    """Serve ``app`` on the already-bound ``sock`` until a signal; TLS from ``tls`` unless None."""
    config = uvicorn.Config(
        app,
        lifespan="on",
        ws="none",  # MCP needs no WebSocket: uvicorn's protocol and the websockets package stay unloaded
        log_level="warning",
        access_log=False,
        timeout_keep_alive=keep_alive_s,  # type: ignore[arg-type]  # uvicorn only passes it to call_later
    )
    # sse-starlette ends every SSE response as soon as uvicorn sees the signal — the answers of the
    # calls in flight included (legacy clients get them as SSE). The drain above decides instead.
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # sse-starlette has no annotation
    server = _DaemonServer(config, handle, ConnectionTable(policy), tls)
    server.run(sockets=[sock])
    if not server.started:
        raise Internal("the HTTP server failed to start (see the messages above)")

"""Run the HTTPS daemon: bind policy, store lock, local CA, uvicorn, and a draining shutdown.

Order matters: the bind policy and the store lock are checked before anything slow, so a second
daemon on the same store fails in well under a second with the lock message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator

import uvicorn

from velesmem import limits
from velesmem.config import Settings
from velesmem.daemon.address import DaemonAddress, check_bind_allowed
from velesmem.daemon.app import McpHandle, build_app
from velesmem.daemon.tls import prepare_tls
from velesmem.errors import Internal

PREFIX = "[velesdb-memory]"
DRAIN_TIMEOUT_S = 30.0  # longest wait for in-flight calls after SIGTERM/SIGINT
GRACEFUL_CLOSE_S = 5.0  # then uvicorn's own wait for connections to close
DRAIN_POLL_S = 0.02
# Internal knob (tests use a short one); not a user setting.
SESSION_IDLE_ENV = "VELESMEM_INTERNAL_SESSION_IDLE_SECONDS"


def _say(line: str) -> None:
    print(f"{PREFIX} {line}", file=sys.stderr, flush=True)


def session_idle_timeout() -> float:
    """Seconds an MCP session may stay idle before it expires and frees its slot."""
    raw = os.environ.get(SESSION_IDLE_ENV)
    if raw is None:
        return float(limits.HTTP_SESSION_IDLE_SECONDS)
    try:
        value = float(raw)
    except ValueError:
        raise Internal(f"{SESSION_IDLE_ENV}={raw!r} is not a number") from None
    if not value > 0:
        raise Internal(f"{SESSION_IDLE_ENV}={raw!r} must be positive")
    return value


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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_TIMEOUT_S
        if drain.in_flight:
            _say(f"draining {drain.in_flight} in-flight call(s)…")
        while drain.in_flight and loop.time() < deadline:
            await asyncio.sleep(DRAIN_POLL_S)
        await self.handle.terminate_sessions()
        await super().shutdown(sockets)


def _bind_socket(address: DaemonAddress) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.bind_host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.bind_host, address.port))
    except OSError as exc:
        sock.close()
        raise Internal(
            f"cannot listen on {address.bind_host}:{address.port}: {exc.strerror}. Is another "
            "velesdb-memory daemon (or another program) using this port? Pick another with "
            "--http-port or VELESDB_MEMORY_HTTP_BIND"
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _startup_lines(address: DaemonAddress, settings: Settings) -> None:
    if address.scheme == "http":
        bar = "!" * 78
        _say(bar)
        _say("WARNING: --http-insecure / VELESDB_MEMORY_HTTP_INSECURE: serving PLAIN HTTP, no TLS.")
        _say("Anything on this machine that can read loopback traffic sees every memory in clear.")
        _say("Use only for local debugging or behind a trusted TLS-terminating proxy.")
        _say(bar)
        _say(f"HTTP server listening on {address.url()}")
        return
    ca = settings.tls_dir / "ca-cert.pem"
    _say(f"HTTPS server listening on {address.url()}")
    _say(
        f"Local CA: {ca} — a client only needs to trust this once (see "
        "./scripts/install-memory-daemon.sh — install-memory-daemon.ps1 on Windows — which does this "
        "automatically); every future leaf certificate this daemon issues is signed by the same CA "
        "and is trusted automatically after that."
    )


def serve_http(settings: Settings) -> int:
    """Serve MCP over streamable HTTPS until SIGTERM/SIGINT; return the exit code."""
    address = check_bind_allowed(settings)
    idle_s = session_idle_timeout()
    from velesmem.mcp.app import AppContext
    from velesmem.mcp.server import build_server
    from velesmem.memory.service import MemoryService

    memory = MemoryService.open(settings=settings)  # StoreLocked → the caller prints it, exit 1
    try:
        sock = _bind_socket(address)
        tls = None if address.scheme == "http" else prepare_tls(settings.tls_dir)
        server = build_server(AppContext(memory=memory, settings=settings))
        app, handle = build_app(server, settings, address, idle_timeout_s=idle_s)
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_CLOSE_S,
            ssl_certfile=None if tls is None else str(tls.leaf_cert),
            ssl_keyfile=None if tls is None else str(tls.leaf_key),
        )
        _startup_lines(address, settings)
        runner = _DrainingServer(config, handle)
        try:
            runner.run(sockets=[sock])
        finally:
            sock.close()
        if not runner.started:
            raise Internal("the HTTP server failed to start (see the messages above)")
    finally:
        memory.close()
    _say("stopped; store closed")
    return 0

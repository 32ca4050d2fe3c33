"""Run the HTTPS daemon: bind policy, store lock, local CA, uvicorn, and a draining shutdown.

Timeouts and the leaf lifetime come from ``tuning.Tuning`` (internal knobs for tests).

Order matters: the bind policy and the store lock are checked before anything slow, so a second
daemon on the same store fails in well under a second with the lock message. The port is bound
next, before the slow imports, so a client that connects while the daemon starts waits in the
listen backlog for its answer instead of being refused and retrying. Start-up runs with the
cyclic garbage collector off (it would walk the growing heap of fastmcp, pydantic and numpy
again and again while they import, ~15 % of the start-up CPU); ``server.py`` freezes what
start-up built and turns it back on just before serving.
"""

from __future__ import annotations

import logging

import datetime as dt
import gc
import socket

from velesmem.config import Settings
from velesmem.daemon.address import DaemonAddress, check_bind_allowed
from velesmem.daemon.tls import prepare_tls
from velesmem.daemon.tuning import Tuning
from velesmem.errors import Internal

log = logging.getLogger("velesmem.daemon")



def _say(line: str) -> None:
    """A lifecycle line for the daemon log (through logging, as every message)."""
    log.info(line)


def _bind_socket(address: DaemonAddress) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.bind_host else socket.AF_INET
    # proto must say TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto is
    # IPPROTO_TCP, and without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
    names = address.served_names()
    if names:
        _say(f"Other machines reach it as {', '.join(names)} (named in its certificate and "
             "admitted by its Host check), trusting the same CA.")
    _say(
        f"Local CA: {ca} — a client only needs to trust this once (`velesdb-memory trust-ca`, "
        "which installers/install-memory-daemon.sh — install-memory-daemon.ps1 on Windows — runs "
        "for you); every future leaf certificate this daemon issues is signed by the same CA "
        "and is trusted automatically after that."
    )


def serve_http(settings: Settings) -> int:
    """Serve MCP over streamable HTTPS until SIGTERM/SIGINT; return the exit code."""
    address = check_bind_allowed(settings)
    tuning = Tuning.from_env()
    gc.disable()  # until server.py's startup freezes the start-up heap (see the module docstring)
    try:
        return _serve_http(settings, address, tuning)
    finally:
        gc.enable()


def _serve_http(settings: Settings, address: DaemonAddress, tuning: Tuning) -> int:
    from velesmem.runtime import Runtime, configure_logging

    # The lock first, before the slow imports: a second daemon on this store fails fast. The
    # Runtime starts (warming in the background) from the app's lifespan.
    configure_logging()
    runtime = Runtime.open(settings, start=False)  # StoreLocked → the caller prints it, exit 1
    try:
        sock = _bind_socket(address)  # before the slow imports: early clients wait, not retry
        address = address.bound_to(sock.getsockname()[1])  # --http-port 0: the port we got
        try:
            from velesmem.daemon.auth import auth_policy

            auth = auth_policy(settings, address, runtime.store)  # no live token when one is needed
            lifetime = dt.timedelta(seconds=tuning.leaf_lifetime_s)
            files = None if address.scheme == "http" else prepare_tls(
                settings.tls_dir, names=address.served_names(), leaf_lifetime=lifetime)
            from velesmem.daemon.app import build_app
            from velesmem.daemon.connections import ConnectionPolicy, connection_cap
            from velesmem.daemon.renewal import LeafRenewer
            from velesmem.daemon.server import ServeTls, run_app
            from velesmem.daemon.tls import server_ssl_context
            from velesmem.mcp.app import AppContext
            from velesmem.mcp.server import build_server

            tls = None
            if files is not None:
                context = server_ssl_context(files)
                tls = ServeTls(context, LeafRenewer(files, context, tuning.leaf_lifetime_s))
            max_connections = connection_cap(settings.http_max_connections)
            policy = ConnectionPolicy(max_connections=max_connections, request_timeout_s=tuning.request_timeout_s,
                                      protocol=tuning.http_protocol)
            server = build_server(AppContext(runtime))
            app, handle = build_app(server, runtime, address, idle_timeout_s=tuning.session_idle_s,
                                    body_queue_s=tuning.body_queue_s, auth=auth,
                                    session_admit_s=tuning.session_admit_s)
            _startup_lines(address, settings)
            _say(auth.describe())
            if max_connections < settings.http_max_connections:
                _say(f"at most {max_connections} connections at once (the open-file limit leaves no "
                     "room for more; raise it with `ulimit -n`)")
            run_app(app, handle, sock, tls=tls, policy=policy, keep_alive_s=tuning.keep_alive_s)
        finally:
            sock.close()
    finally:
        runtime.close()
    _say("stopped; store closed")
    # The process exits next: with the heap frozen, finalization does not walk every object of
    # fastmcp, numpy and FAISS (~0.5 s on a busy 2-core machine, ~0.05 s frozen).
    gc.freeze()
    return 0

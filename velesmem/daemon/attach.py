"""Attach a stdio client to a running daemon: probe ``/health`` strictly, then relay JSON-RPC
messages between stdin/stdout and the daemon's ``/mcp`` over HTTPS (verifying the local CA).

This is how a client configured for stdio shares the daemon's store instead of failing on its lock.
"""

from __future__ import annotations

import logging

import http.client
import json
import ssl

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server

from velesmem.config import Settings
from velesmem.daemon.address import HEALTH_PATH, STORE_HEADER, DaemonAddress, daemon_address
from velesmem.daemon.tls import client_ssl_context, tls_files

log = logging.getLogger("velesmem.daemon")

HEALTH_TIMEOUT_S = 2.0
CONNECT_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 300.0  # the daemon may hold a response stream open


def _ssl_context(settings: Settings) -> ssl.SSLContext | None:
    ca = tls_files(settings.tls_dir).ca_cert
    return client_ssl_context(ca) if ca.is_file() else None


def daemon_answers(settings: Settings) -> bool:
    """True when a daemon serving *our* store answers 200 on ``/health`` at the configured address
    (TLS verified against the CA in the TLS dir; no CA there means no daemon we can trust)."""
    address = daemon_address(settings)
    ours = str(settings.path.resolve())
    try:
        if address.scheme == "https":
            ctx = _ssl_context(settings)
            if ctx is None:
                return False
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                address.connect_host, address.port, timeout=HEALTH_TIMEOUT_S, context=ctx
            )
        else:
            conn = http.client.HTTPConnection(address.connect_host, address.port, timeout=HEALTH_TIMEOUT_S)
        try:
            conn.request("GET", HEALTH_PATH, headers={"Host": _host_header(address)})
            response = conn.getresponse()
            if response.status != 200:
                return False
            try:
                body = json.loads(response.read())
            except ValueError:
                return False
            if not isinstance(body, dict) or body.get("status") != "ok":
                return False
            theirs = body.get("store") or response.getheader(STORE_HEADER)
            if theirs != ours:
                log.warning(f"the daemon at {address.url()} serves another store "
                            f"({theirs}), not {ours}: not attaching")
                return False
            return True
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return False


def _host_header(address: DaemonAddress) -> str:
    host = address.connect_host
    return f"[{host}]:{address.port}" if ":" in host else f"{host}:{address.port}"


def run_stdio_proxy(settings: Settings) -> int:
    """Relay stdio ↔ the daemon's /mcp until stdin closes (then end the session and exit, like the
    stdio server) or the daemon goes away."""
    address = daemon_address(settings)
    verify: ssl.SSLContext | bool = True
    if address.scheme == "https":
        ctx = _ssl_context(settings)
        if ctx is None:
            raise RuntimeError("no CA to verify the daemon with")
        verify = ctx
    log.info(
        f"store {settings.path} is held by a running daemon; attaching to "
        f"{address.url()} (stdio ↔ {address.scheme.upper()} proxy, CA {tls_files(settings.tls_dir).ca_cert})"
    )
    anyio.run(_relay, address.url(), verify, settings.auth_token)
    return 0


async def _relay(url: str, verify: ssl.SSLContext | bool, token: str = "") -> None:
    timeout = httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
    # VELESDB_MEMORY_AUTH_TOKEN, for a daemon that requires a bearer token (docs/auth.md)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx2.AsyncClient(verify=verify, timeout=timeout, headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (remote_read, remote_write):
            async with stdio_server() as (local_read, local_write):
                async with anyio.create_task_group() as tg:

                    async def upstream() -> None:
                        async for message in local_read:
                            if isinstance(message, Exception):
                                log.warning(f"dropped a malformed message: {message}")
                                continue
                            await remote_write.send(message)
                        tg.cancel_scope.cancel()  # stdin closed: the client is gone

                    async def downstream() -> None:
                        async for message in remote_read:
                            if isinstance(message, Exception):
                                log.warning(f"daemon error: {message}")
                                continue
                            await local_write.send(message)
                        tg.cancel_scope.cancel()  # the daemon closed the stream

                    tg.start_soon(upstream)
                    tg.start_soon(downstream)
                # Both transports wait for their writer to be closed before they finish: without
                # this, stdio_server's stdout writer would keep the proxy alive after stdin closed.
                await local_write.aclose()
                await remote_write.aclose()

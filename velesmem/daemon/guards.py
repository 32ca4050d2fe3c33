"""ASGI guards in front of the MCP endpoint: the Host/Origin allow-list and the shutdown drain,
plus the refusal helpers the other guards (``bodies``, ``sessions``, ``request_ids``) share.

Each guard answers with a short plain-text (or JSON-RPC) refusal before the request reaches the
MCP session manager, so a hostile or buggy client costs neither memory nor a session slot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
MCP_SESSION_HEADER = "mcp-session-id"
MCP_PROTOCOL_HEADER = "mcp-protocol-version"


def allowed_authorities(port: int, extra_hosts: Iterable[str] = ()) -> frozenset[str]:
    """``host:port`` values a Host header may carry: the loopback names (plus ``extra_hosts``) on ``port``."""
    hosts = list(LOOPBACK_HOSTS) + [_bracket(h) for h in extra_hosts]
    return frozenset(f"{h}:{port}".lower() for h in hosts)


def allowed_origins(authorities: Iterable[str], scheme: str) -> frozenset[str]:
    """Browser origins allowed to call us: the same authorities under our own scheme."""
    return frozenset(f"{scheme}://{a}" for a in authorities)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def plain_refusal(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer ``status`` with a one-line plain-text ``text``."""
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


async def jsonrpc_refusal(
    send: Send, status: int, message: str, *, code: int = -32000, request_id: Any = None,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer ``status`` with a JSON-RPC error body (MCP clients surface its message per request)."""
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += extra or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HostOriginGuard:
    """DNS-rebinding protection: a foreign Host → 421, a foreign Origin → 403 (absent Origin is fine)."""

    def __init__(self, app: ASGIApp, *, authorities: frozenset[str], origins: frozenset[str]) -> None:
        self.app = app
        self.authorities = authorities
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "").strip().lower()
        if host not in self.authorities:
            await plain_refusal(send, 421, f"Misdirected Request: Host {host!r} is not this daemon")
            return
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower().rstrip("/") not in self.origins:
            await plain_refusal(send, 403, f"Forbidden: Origin {origin!r} is not allowed")
            return
        await self.app(scope, receive, send)


class DrainGate:
    """Counts in-flight MCP calls; once closing, new requests to ``/mcp`` get a worded 503 while the
    running ones finish (the listener stays open meanwhile, so nobody sees "connection refused")."""

    def __init__(self, app: ASGIApp, *, state: DrainState, path: str) -> None:
        self.app = app
        self.state = state
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if self.state.closing:
            await jsonrpc_refusal(send, 503, "velesdb-memory is shutting down: the call was not "
                                  "run; retry once the daemon is back")
            return
        if scope["method"] != "POST":  # GET streams and DELETEs do not hold the shutdown
            await self.app(scope, receive, send)
            return
        self.state.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.state.in_flight -= 1


class DrainState:
    """Shared between the DrainGate and the server's shutdown: closing flag and in-flight count."""

    def __init__(self) -> None:
        self.closing = False
        self.in_flight = 0

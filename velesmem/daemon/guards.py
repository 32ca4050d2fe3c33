"""ASGI guards in front of the MCP endpoint: Host/Origin allow-list, body cap, session cap, drain.

Each guard answers with a short plain-text (or JSON-RPC) refusal before the request reaches the
MCP session manager, so a hostile or buggy client costs neither memory nor a session slot.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem.config import ENV_PREFIX

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


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


async def _jsonrpc_refusal(send: Send, status: int, message: str) -> None:
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
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
            await _plain(send, 421, f"Misdirected Request: Host {host!r} is not this daemon")
            return
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower().rstrip("/") not in self.origins:
            await _plain(send, 403, f"Forbidden: Origin {origin!r} is not allowed")
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse a request body over ``max_bytes`` with 413: by Content-Length before reading, and by
    counting streamed (chunked) bytes as they arrive, never buffering past the cap."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return (
            f"Request body too large: the limit is {self.max_bytes} bytes "
            f"({ENV_PREFIX}HTTP_MAX_BODY_BYTES)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                await _plain(send, 400, "Bad Request: invalid Content-Length")
                return
            if too_big:
                await _plain(send, 413, self._message(), [(b"connection", b"close")])
                return
        received = 0
        refused = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Answer now and tell the app the client went away: nothing past the cap
                    # is read, and whatever the app still sends is dropped below.
                    refused = True
                    if not started:
                        await _plain(send, 413, self._message(), [(b"connection", b"close")])
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counting_receive, guarded_send)


class SessionCap:
    """A request that would open one session too many gets a clear 503 JSON-RPC refusal.

    Only handshake-era requests open sessions (the 2026 protocol is one self-contained POST per
    call). The SDK session manager enforces the same cap under its own lock; this guard only words
    the refusal so the user knows which setting to change.
    """

    def __init__(self, app: ASGIApp, *, max_sessions: int, count: Callable[[], int]) -> None:
        self.app = app
        self.max_sessions = max_sessions
        self.count = count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and self._opens_session(scope) \
                and self.count() >= self.max_sessions:
            await _jsonrpc_refusal(
                send,
                503,
                f"velesdb-memory: too many open MCP sessions ({self.max_sessions}, "
                f"{ENV_PREFIX}HTTP_MAX_SESSIONS); close an unused client or wait for idle sessions "
                "to expire, then retry",
            )
            return
        await self.app(scope, receive, send)


    @staticmethod
    def _opens_session(scope: Scope) -> bool:
        headers = Headers(scope=scope)
        version = headers.get(MCP_PROTOCOL_HEADER)
        return MCP_SESSION_HEADER not in headers and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)


class DrainGate:
    """Counts in-flight MCP calls; once closing, new requests get 503 while running ones finish."""

    def __init__(self, app: ASGIApp, *, state: "DrainState") -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.state.closing:
            await _jsonrpc_refusal(send, 503, "velesdb-memory is shutting down: the call was not "
                                   "run; retry once the daemon is back")
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

"""Every request gets an answer: a JSON-RPC id reused on a session while the first request with it is
still in flight is refused at once.

The SDK routes each answer to the open response stream registered under ``str(id)``; a second
request with the same id replaces the first's stream, so one of the two answers is lost and its
stream is kept open by keep-alive pings forever (the client's read timeout never fires). The
duplicate gets an immediate 409 whose JSON-RPC error names the id instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import pydantic_core
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from velesmem.daemon.bodies import replay_chunks
from velesmem.daemon.guards import MCP_SESSION_HEADER, jsonrpc_refusal

INVALID_REQUEST = -32600
# Clients write ``{"jsonrpc", "id", "method", "params"}`` in that order, so the id is found in a short
# prefix without parsing a large body twice; otherwise the whole body is parsed.
ID_PEEK_BYTES = 4096


def request_id(chunks: Sequence[bytes]) -> tuple[bool, Any]:
    """``(True, id)`` if the body made of ``chunks`` is a JSON-RPC request (a method and an id),
    else ``(False, None)``."""
    size = sum(len(c) for c in chunks)
    if size > ID_PEEK_BYTES:
        head_bytes = bytearray()
        for chunk in chunks:
            head_bytes += chunk[: ID_PEEK_BYTES - len(head_bytes)]
            if len(head_bytes) >= ID_PEEK_BYTES:
                break
        try:
            head = pydantic_core.from_json(bytes(head_bytes), allow_partial=True)
        except ValueError:
            head = None
        # A partial parse keeps only complete strings, but a number cut short looks complete: trust
        # the id only if another member follows it.
        if isinstance(head, dict) and "id" in head and "method" in head and list(head)[-1] != "id":
            return _as_request(head)
    try:  # small, or the id comes late: parse it all (a transient copy)
        message = pydantic_core.from_json(chunks[0] if len(chunks) == 1 else b"".join(chunks))
    except ValueError:
        return False, None  # the SDK answers the parse error
    return _as_request(message) if isinstance(message, dict) else (False, None)


def _as_request(message: dict[str, Any]) -> tuple[bool, Any]:
    rid = message.get("id")
    if "method" not in message or rid is None or isinstance(rid, (dict, list, bool)):
        return False, None  # a notification, a response, or an id the SDK itself refuses
    return True, rid


class DuplicateIdGuard:
    """Tracks the request ids in flight per session and refuses a reused one (see module doc).
    Sits inside ``BodyGate``, so the body is already in memory: collecting it here costs nothing.

    An id is taken from when its request reaches the SDK until the SDK's ASGI call for it returns.
    With JSON answers (``app.HTTP_APP_OPTIONS``) the SDK drops the id's answer stream before it
    sends the answer, and the call returns once the answer is handed to the connection, so a
    client may reuse an id the moment it has read the answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight: dict[str, dict[str, int]] = {}

    def _taken(self, session_id: str, key: str) -> bool:
        return self.in_flight.get(session_id, {}).get(key, 0) > 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = Headers(scope=scope).get(MCP_SESSION_HEADER) if scope["type"] == "http" else None
        if session_id is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = await _whole_body(receive)
        if chunks is None:
            await self.app(scope, receive, send)
            return
        is_request, rid = request_id(chunks) if chunks else (False, None)
        replay = replay_chunks(chunks, receive)
        if not is_request:
            await self.app(scope, replay, send)
            return
        key = str(rid)  # the SDK's routing key: 7 and "7" collide there too
        if self._taken(session_id, key):
            chunks.clear()
            await jsonrpc_refusal(
                send, 409,
                f"velesdb-memory: request id {rid!r} is already in flight on this session; give "
                "every concurrent request its own id", code=INVALID_REQUEST, request_id=rid,
            )
            return
        session = self.in_flight.setdefault(session_id, {})
        session[key] = session.get(key, 0) + 1
        try:
            await self.app(scope, replay, send)
        finally:
            session[key] -= 1
            if not session[key]:
                del session[key]
            if not session:
                del self.in_flight[session_id]


async def _whole_body(receive: Receive) -> deque[bytes] | None:
    """The body's chunks, or None if the client went away first."""
    chunks: deque[bytes] = deque()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        if message.get("body"):
            chunks.append(message["body"])
        if not message.get("more_body", False):
            return chunks

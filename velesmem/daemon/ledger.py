"""The live MCP sessions, kept at the ASGI level around the MCP endpoint (no library internals).

The MCP SDK's session manager keeps its session table private, so the daemon keeps its own: a
session is live from the response that hands out its ``Mcp-Session-Id`` (an opening request
answered below 400) until the client deletes it, a request for it is answered 404 (it idled out
or was ended), or the daemon ends it. The daemon ends a session the way a client does, with a
``DELETE`` carrying its id (and the credential that opened it) sent to the endpoint in process:
the SDK then terminates its transport, ends its streams and forgets it, all through its public
request path. A session that idled out inside the SDK stays listed until one of those happens;
ending it then is a no-op answered 404, so the list may only over-count, never under-count.
It also keeps the ``clientInfo`` each session's initialize named (read from the first 16 KiB of
that request's body as it passes, for the dashboard's Status page).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem.daemon.guards import MCP_SESSION_HEADER

log = logging.getLogger("velesmem.daemon")

_SESSION_KEY = MCP_SESSION_HEADER.lower().encode("latin-1")
_GONE = 404
CLIENT_INFO_PEEK_BYTES = 16 * 1024  # of an opening request's body, read for its clientInfo
CLIENT_INFO_CHARS = 120


class SessionLedger:
    """ASGI wrapper of the MCP endpoint that records which sessions are live (module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # session id → the scope of the request that opened it (for its credential and Host)
        self._opened_by: dict[str, Scope] = {}
        self._clients: dict[str, str] = {}  # session id → its initialize's clientInfo

    def live_sessions(self) -> Mapping[str, Scope]:
        """Session id → the scope that opened it, for every session not known to have ended."""
        return self._opened_by

    def client_of(self, session_id: str) -> str:
        """The ``clientInfo`` name and version the session's initialize sent ('' if none)."""
        return self._clients.get(session_id, "")

    def _forget(self, session_id: str) -> Scope | None:
        self._clients.pop(session_id, None)
        return self._opened_by.pop(session_id, None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = Headers(scope=scope).get(MCP_SESSION_HEADER)
        status: list[int] = []
        opening = bytearray()  # the start of a session-less POST's body: an initialize

        async def peeking_receive() -> Message:
            message = await receive()
            room = CLIENT_INFO_PEEK_BYTES - len(opening)
            if message["type"] == "http.request" and room > 0:
                opening.extend(message.get("body", b"")[:room])
            return message

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not status:
                status.append(message["status"])
                if session_id is None and message["status"] < 400:
                    opened = _session_header(message)
                    if opened is not None:
                        self._opened_by[opened] = scope
                        self._clients[opened] = _client_info(bytes(opening))
            await send(message)

        peek = session_id is None and scope["method"] == "POST"
        await self.app(scope, peeking_receive if peek else receive, noting_send)
        if session_id is not None and status and (
            status[0] == _GONE or (scope["method"] == "DELETE" and status[0] < 300)
        ):
            self._forget(session_id)

    async def end(self, session_id: str) -> None:
        """End one session now, as its client would (a DELETE): its id answers 404 from here on."""
        opener = self._forget(session_id)
        if opener is None:
            return
        headers = [(k, v) for k, v in opener.get("headers", []) if k == b"host"]
        headers.append((_SESSION_KEY, session_id.encode("latin-1")))
        scope: dict[str, Any] = {
            **{k: v for k, v in opener.items() if k != "headers"},
            "method": "DELETE", "headers": headers, "query_string": b"",
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(_message: Message) -> None:
            return None

        try:
            await self.app(scope, receive, discard)
        except Exception:  # the session is forgotten either way
            log.debug("ending MCP session %s failed", session_id[:16], exc_info=True)

    async def end_all(self) -> None:
        """End every live session (their GET streams end with them)."""
        for session_id in list(self._opened_by):
            await self.end(session_id)


def _client_info(body: bytes) -> str:
    """``name version`` from an initialize request's ``clientInfo`` ('' when it has none)."""
    try:
        request = json.loads(body)
        info = request["params"]["clientInfo"]
        text = f"{info.get('name', '')} {info.get('version', '')}".strip()
    except (ValueError, KeyError, TypeError, AttributeError):
        return ""
    return text[:CLIENT_INFO_CHARS]


def _session_header(message: Message) -> str | None:
    for key, value in message.get("headers", []):
        if key.lower() == _SESSION_KEY:
            return bytes(value).decode("latin-1")
    return None

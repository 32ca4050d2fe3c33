"""The MCP session cap, which never locks clients out.

Clients that exit without ending their session (the Inspector CLI, mcp-remote) leak it until it
idles out. So at the cap, a request opening one more session closes the *least recently active
idle* session instead of being refused: idle means no request in flight — a live client keeps its
GET stream open, so only abandoned sessions (or clients that went quiet) are ever chosen, and such
a client simply initializes again if it comes back. Only when every session is busy is the new one
refused, with a 503 that names the setting.
"""

from __future__ import annotations

import logging

import asyncio
import time
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem.config import ENV_PREFIX
from velesmem.daemon.guards import MCP_PROTOCOL_HEADER, MCP_SESSION_HEADER, jsonrpc_refusal

log = logging.getLogger("velesmem.daemon")


class SessionDirectory(Protocol):
    """The live sessions of the MCP endpoint, and a way to close one."""

    def live_sessions(self) -> Mapping[str, Any]: ...

    async def evict(self, session_id: str) -> None: ...


class SessionActivity:
    """Per session: how many requests are in flight, and when the last one ended."""

    def __init__(self) -> None:
        self.in_flight: dict[str, int] = {}
        self.last_active: dict[str, float] = {}

    def begin(self, session_id: str) -> None:
        self.in_flight[session_id] = self.in_flight.get(session_id, 0) + 1

    def end(self, session_id: str) -> None:
        left = self.in_flight.get(session_id, 1) - 1
        if left > 0:
            self.in_flight[session_id] = left
        else:
            self.in_flight.pop(session_id, None)
        self.last_active[session_id] = time.monotonic()

    def least_recently_active_idle(self, live: Collection[str]) -> str | None:
        """The live session with nothing in flight whose last request ended longest ago."""
        idle = [s for s in live if s in self.last_active and not self.in_flight.get(s)]
        return min(idle, key=self.last_active.__getitem__, default=None)

    def forget_gone(self, live: Collection[str]) -> None:
        """Drop records of sessions that ended (expired, deleted, evicted) and have nothing in flight."""
        for session_id in [s for s in self.last_active if s not in live and not self.in_flight.get(s)]:
            del self.last_active[session_id]


class SessionCap:
    """Keep at most ``max_sessions`` MCP sessions, evicting idle ones to make room (see module doc)."""

    def __init__(self, app: ASGIApp, *, max_sessions: int, directory: SessionDirectory) -> None:
        self.app = app
        self.max_sessions = max_sessions
        self.directory = directory
        self.activity = SessionActivity()
        self.evicted = 0
        self._opening = 0  # session-opening requests admitted and still being answered
        self._admission = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_HEADER)
        if session_id is not None:
            if session_id not in self.directory.live_sessions():
                await self.app(scope, receive, send)  # unknown or expired: the SDK answers 404
                return
            self.activity.begin(session_id)
            try:
                await self.app(scope, receive, send)
            finally:
                self.activity.end(session_id)
            return
        if scope["method"] != "POST" or not _handshake_era(headers):
            await self.app(scope, receive, send)  # the 2026 protocol: one self-contained POST, no session
            return
        if not await self._make_room():
            await jsonrpc_refusal(
                send, 503,
                f"velesdb-memory: too many open MCP sessions ({self.max_sessions}, "
                f"{ENV_PREFIX}HTTP_MAX_SESSIONS), and every one has a request in flight; close an "
                "unused client or raise the cap, then retry",
            )
            return
        await self._open_session(scope, receive, send)

    async def _make_room(self) -> bool:
        """Reserve a slot for one more session, evicting idle ones; False if all are busy."""
        async with self._admission:
            live = self.directory.live_sessions()
            self.activity.forget_gone(live)
            while len(live) + self._opening >= self.max_sessions:
                victim = self.activity.least_recently_active_idle(list(live))
                if victim is None:
                    return False
                idle_s = time.monotonic() - self.activity.last_active[victim]
                await self.directory.evict(victim)
                self.activity.forget_gone(live)
                self.evicted += 1
                log.info("session cap (%d) reached: closed the least recently active idle "
                         "session (idle %.0f s)", self.max_sessions, idle_s)
            self._opening += 1
            return True

    async def _open_session(self, scope: Scope, receive: Receive, send: Send) -> None:
        opened: list[str] = []

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not opened:
                for key, value in message.get("headers", []):
                    if key.lower() == MCP_SESSION_HEADER.encode():
                        # The session is live (and counted) now: the reservation is used up, and
                        # the opening request, still being answered, is in flight on it.
                        opened.append(value.decode("latin-1"))
                        self._opening -= 1
                        self.activity.begin(opened[0])
                        break
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            if opened:
                self.activity.end(opened[0])
            else:
                self._opening -= 1


def _handshake_era(headers: Headers) -> bool:
    version = headers.get(MCP_PROTOCOL_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

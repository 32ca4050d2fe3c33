"""The MCP session cap, which no local process can use to lock clients out.

Clients that exit without ending their session (the Inspector CLI, mcp-remote) leak it until it
idles out, and any local process can open sessions and hold a GET stream on each. So at the cap,
a request opening one more session closes an existing one instead of being refused: never one
with a call in flight (a POST or DELETE being answered), but otherwise even one holding a GET
stream, which is then ended. The choice, in order:

1. a session that never went past the handshake (initialize, then at most the ``initialized``
   notification) and holds no stream: what a leaking client leaves behind;
2. any other session without an open GET stream;
3. a session holding a GET stream;

and within each, the least recently active. A client whose session was closed gets 404 on its next
request and initializes again. Initializes that arrive together are admitted up to the cap; past
it, an initialize whose room can only come from a session still opening (or from a call still in
flight) waits for one to finish, and only when none does within ``HTTP_SESSION_ADMIT_WAIT_SECONDS``
is it refused, with a 503 that names the setting.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem import limits
from velesmem.config import ENV_PREFIX
from velesmem.daemon.guards import MCP_PROTOCOL_HEADER, MCP_SESSION_HEADER, jsonrpc_refusal

log = logging.getLogger("velesmem.daemon")

HANDSHAKE_REQUESTS = 1  # after the opening initialize: the ``notifications/initialized`` POST


class SessionDirectory(Protocol):
    """The live sessions of the MCP endpoint, and a way to close one."""

    def live_sessions(self) -> Mapping[str, Any]: ...

    async def evict(self, session_id: str) -> None: ...


@dataclass
class SessionRecord:
    """What one session is doing: calls and GET streams in flight, requests made, last activity."""

    calls: int = 0  # POST/DELETE requests being answered
    streams: int = 0  # GET streams open
    requests: int = 0  # requests made after the one that opened the session
    last_active: float = field(default_factory=time.monotonic)

    def rank(self) -> int:
        """Eviction preference: 0 leaked after the handshake, 1 quiet, 2 holding a GET stream."""
        if self.streams:
            return 2
        return 0 if self.requests <= HANDSHAKE_REQUESTS else 1


class SessionActivity:
    """Per session: what is in flight and when it was last active (shared by the session cap and
    the shutdown, which ends every session with no call in flight at once)."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionRecord] = {}
        self.changed = asyncio.Event()  # set whenever a request ends: room may have appeared

    def begin(self, session_id: str, *, stream: bool, opening: bool = False) -> None:
        record = self.sessions.setdefault(session_id, SessionRecord())
        if stream:
            record.streams += 1
        else:
            record.calls += 1
        if not opening:
            record.requests += 1
        record.last_active = time.monotonic()

    def end(self, session_id: str, *, stream: bool) -> None:
        record = self.sessions.get(session_id)
        if record is not None:
            if stream:
                record.streams = max(0, record.streams - 1)
            else:
                record.calls = max(0, record.calls - 1)
            record.last_active = time.monotonic()
        self.changed.set()

    def busy(self, session_id: str) -> bool:
        """True while the session has a call in flight (an open GET stream is not a call)."""
        record = self.sessions.get(session_id)
        return record is not None and record.calls > 0

    def known(self, live: Collection[str]) -> int:
        """How many ``live`` sessions have been seen answering (the rest are still opening)."""
        return sum(1 for s in live if s in self.sessions)

    def next_victim(self, live: Collection[str]) -> str | None:
        """The live session to close first (module doc), or None if every one is busy or opening."""
        idle = [s for s in live if s in self.sessions and not self.sessions[s].calls]
        return min(idle, key=lambda s: (self.sessions[s].rank(), self.sessions[s].last_active), default=None)

    def idle(self, live: Collection[str]) -> list[str]:
        """The live sessions answering with no call in flight (streams or not; not those opening)."""
        return [s for s in live if s in self.sessions and not self.sessions[s].calls]

    def forget_gone(self, live: Collection[str]) -> None:
        """Drop records of sessions that ended (expired, deleted, evicted) and have nothing in flight."""
        for session_id in [s for s, r in self.sessions.items() if s not in live and not r.calls and not r.streams]:
            del self.sessions[session_id]


class SessionCap:
    """Keep at most ``max_sessions`` MCP sessions, closing others to make room (see module doc)."""

    def __init__(self, app: ASGIApp, *, max_sessions: int, directory: SessionDirectory,
                 activity: SessionActivity, admit_wait_s: float = float(limits.HTTP_SESSION_ADMIT_WAIT_SECONDS)) -> None:
        self.app = app
        self.max_sessions = max_sessions
        self.directory = directory
        self.activity = activity
        self.admit_wait_s = admit_wait_s
        self.evicted = 0
        self._opening = 0  # session-opening requests admitted whose session is not yet answering
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
            stream = scope["method"] == "GET"
            self.activity.begin(session_id, stream=stream)
            try:
                await self.app(scope, receive, send)
            finally:
                self.activity.end(session_id, stream=stream)
            return
        if scope["method"] != "POST" or not _handshake_era(headers):
            await self.app(scope, receive, send)  # the 2026 protocol: one self-contained POST, no session
            return
        if not await self._make_room():
            await jsonrpc_refusal(
                send, 503,
                f"velesdb-memory: too many open MCP sessions ({self.max_sessions}, "
                f"{ENV_PREFIX}HTTP_MAX_SESSIONS), and every one has a call in flight; close an "
                "unused client or raise the cap, then retry",
            )
            return
        await self._open_session(scope, receive, send)

    async def _make_room(self) -> bool:
        """Reserve a slot for one more session, closing others to make room; False if every
        session kept a call in flight for the whole admission wait."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.admit_wait_s
        waited = False
        async with self._admission:
            while True:
                live = list(self.directory.live_sessions())
                self.activity.forget_gone(live)
                # Sessions still opening are in the SDK's table but not yet known: _opening counts them.
                if self.activity.known(live) + self._opening < self.max_sessions:
                    self._opening += 1
                    return True
                victim = self.activity.next_victim(live)
                if victim is not None:
                    await self._evict(victim)
                    continue
                left = deadline - loop.time()
                if left <= 0:
                    return False
                if not waited:
                    waited = True
                    log.info("session cap (%d) reached and no session can be closed (each has a call in "
                             "flight or is opening): an initialize waits up to %.0f s for room",
                             self.max_sessions, left)
                self.activity.changed.clear()
                try:
                    await asyncio.wait_for(self.activity.changed.wait(), left)
                except TimeoutError:
                    pass

    async def _evict(self, session_id: str) -> None:
        record = self.activity.sessions[session_id]
        idle_s, streams = time.monotonic() - record.last_active, record.streams
        await self.directory.evict(session_id)
        self.evicted += 1
        log.info("session cap (%d) reached: closed the least recently active session with no call "
                 "in flight (idle %.0f s%s)", self.max_sessions, idle_s,
                 ", its GET stream ended" if streams else "")

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
                        self.activity.begin(opened[0], stream=False, opening=True)
                        break
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            if opened:
                self.activity.end(opened[0], stream=False)
            else:
                self._opening -= 1
                self.activity.changed.set()


def _handshake_era(headers: Headers) -> bool:
    version = headers.get(MCP_PROTOCOL_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

"""HTTP/1.1 connections with the deadlines and the cap uvicorn's HTTP protocols lack.

uvicorn only times out a keep-alive connection idle after a response. Here, in addition (on
either of uvicorn's HTTP/1.1 protocols: httptools, its C parser, where it is installed, else h11):

- a request head must be complete within the request timeout of the connection opening (or of the
  previous response ending), however slowly its bytes trickle in; a request body may pause for at
  most the same time (unless the daemon itself stopped reading it);
- a request answered before its body was read (413) has the rest of its body read and discarded,
  bounded in bytes and time, so the client can finish sending and read the answer instead of a
  reset connection; nothing of it is buffered;
- the open connections are capped (below the descriptor limit): a new one beyond the cap closes the
  connection that has waited longest for a request, so slow or idle ones never starve ``accept()``
  and ``/health`` keeps answering.
"""

from __future__ import annotations

import logging

import asyncio
import enum
import importlib.util
import weakref
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from velesmem import limits
from velesmem.errors import Internal

log = logging.getLogger("velesmem.daemon")


@dataclass(frozen=True)
class ConnectionPolicy:
    """The bounds every connection is held to."""

    max_connections: int
    request_timeout_s: float
    protocol: str | None = None  # a name in PROTOCOLS; None: HTTP_PROTOCOL
    drain_max_bytes: int = limits.HTTP_REFUSED_BODY_DRAIN_BYTES
    drain_timeout_s: float = float(limits.HTTP_REFUSED_BODY_DRAIN_SECONDS)


def connection_cap(configured: int) -> int:
    """``configured``, kept below the descriptor limit (first raised toward ``HTTP_FD_TARGET`` when
    the hard limit allows), leaving ``HTTP_FD_RESERVE`` descriptors for the store, logs and TLS files."""
    try:
        import resource
    except ImportError:  # Windows: no descriptor limit of this kind
        return configured
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinite = resource.RLIM_INFINITY
    target = limits.HTTP_FD_TARGET if hard == infinite else min(hard, limits.HTTP_FD_TARGET)
    if soft != infinite and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == infinite:
        return configured
    return max(1, min(configured, soft - limits.HTTP_FD_RESERVE))


class ConnectionTable:
    """The open connections, and which of them wait for a request (and since when)."""

    def __init__(self, policy: ConnectionPolicy) -> None:
        self.policy = policy
        self._open: set[_Guarded] = set()
        # Accepted, TLS handshake still running (a failed handshake never reports back: weak refs).
        self._handshaking: weakref.WeakSet[_Guarded] = weakref.WeakSet()
        self.evicted = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._open)

    def accepted(self, conn: _Guarded) -> None:
        """Note a connection just accepted, before its TLS handshake."""
        self._handshaking.add(conn)

    def admit(self, conn: _Guarded) -> bool:
        """Count ``conn`` in (its handshake is done); beyond the cap, drop the connection that has
        waited longest for a request. False (refuse ``conn``) only when every other one is busy."""
        self._handshaking.discard(conn)
        self._open.add(conn)
        if len(self._open) <= self.policy.max_connections:
            return True
        waiting = [c for c in self._open if c is not conn and c.waiting_since is not None]
        if not waiting:
            self._open.discard(conn)
            self.refused += 1
            return False
        min(waiting, key=lambda c: c.waiting_since or 0.0).drop()
        self.evicted += 1
        return True

    def discard(self, conn: _Guarded) -> None:
        self._open.discard(conn)

    def settled(self, quiet_since: float) -> bool:
        """True when no connection began waiting for a request after ``quiet_since`` (loop time):
        none was just accepted or just got an answer, so none is about to send a request. (Requests
        being served are counted by the drain; open GET streams do not hold it.)"""
        conns = [*self._open, *self._handshaking]
        return not any(c.waiting_since is not None and c.waiting_since > quiet_since for c in conns)


class Phase(enum.Enum):
    """Where the client is in its current request (h11's view of "their state", for both parsers)."""

    IDLE = "idle"  # no request yet, or its head still incomplete
    BODY = "body"  # the head is in; its body is arriving
    DONE = "done"  # the whole request is in


class _Guarded:
    """The request deadlines, the bounded drain and the cap, over a uvicorn HTTP protocol (a mixin:
    the class it is mixed into provides ``transport``, ``loop``, ``flow`` and the protocol hooks)."""

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    flow: Any

    def __init__(self, *args: Any, table: ConnectionTable, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table = table
        self.policy = table.policy
        self.waiting_since: float | None = None  # loop time since we wait for a request; None = busy
        self._deadline: asyncio.TimerHandle | None = None
        self._draining = False
        self._drained = 0
        self.waiting_since = self.loop.time()  # accepted: a request is on its way
        table.accepted(self)

    def _phase(self) -> Phase:
        raise NotImplementedError

    def _pipelined(self) -> bool:
        """True if the next request is already in, queued behind the response that just ended."""
        return False

    # --- uvicorn protocol hooks --------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if not self.table.admit(self):
            log.warning("refused a connection: %d connections are open and all busy "
                        "(VELESDB_MEMORY_HTTP_MAX_CONNECTIONS)", self.policy.max_connections)
            self.transport.abort()  # the transport just made, kept by uvicorn's hook above
            return
        self._await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.waiting_since = None
        self.table.discard(self)
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        if self._draining:
            self._drained += len(data)
            if self._drained > self.policy.drain_max_bytes:
                self.drop()
                return
        super().data_received(data)  # type: ignore[misc]
        self._follow_request()

    def on_response_complete(self) -> None:
        pipelined = self._pipelined()
        super().on_response_complete()  # type: ignore[misc]
        if self.transport.is_closing():
            return
        if not pipelined and self._phase() is Phase.BODY:
            # Answered before the body was read: the parser now discards the rest as it arrives.
            self._draining = True
            self._drained = 0
            self.waiting_since = self.loop.time()
            self._arm(self.policy.drain_timeout_s)
        else:
            self._follow_request()

    # --- deadlines ---------------------------------------------------------------------------
    def _await_request(self) -> None:
        """Start waiting for a request head: it must be complete within the request timeout."""
        self.waiting_since = self.loop.time()
        self._arm(self.policy.request_timeout_s)

    def _follow_request(self) -> None:
        """Re-aim the deadline at whatever the client owes us now."""
        if self.transport.is_closing():
            self._disarm()
            return
        phase = self._phase()
        if self._draining:
            if phase is Phase.IDLE:  # the client finished its body; the connection lives on
                self._draining = False
                self._await_request()
            return  # the drain deadline stands, however the bytes arrive
        if phase is Phase.IDLE:
            if self.waiting_since is None:  # a new cycle began (the previous response ended)
                self._await_request()
            return  # a head still incomplete: its deadline is not pushed back by trickled bytes
        self.waiting_since = None
        if phase is Phase.BODY:
            self._arm(self.policy.request_timeout_s)  # the body may pause, but not for longer
        else:
            self._disarm()  # the request is in; the response has no deadline (SSE streams live long)

    def _arm(self, delay_s: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(delay_s, self._on_deadline)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _on_deadline(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if not self._draining and self._phase() is Phase.BODY and self.flow.read_paused:
            self._arm(self.policy.request_timeout_s)  # we stopped reading (body budget), not the client
            return
        self.drop()

    def drop(self) -> None:
        """Close at once: a client that missed its deadline (or lost its slot) gets no goodbye."""
        self._disarm()
        self.waiting_since = None
        self.table.discard(self)
        self.transport.abort()


_H11_PHASES = {h11.IDLE: Phase.IDLE, h11.SEND_BODY: Phase.BODY}


class GuardedH11Protocol(_Guarded, H11Protocol):
    """uvicorn's h11 protocol (pure Python) plus the request deadlines, the drain and the cap."""

    def _phase(self) -> Phase:
        return _H11_PHASES.get(self.conn.their_state, Phase.DONE)


# uvicorn's names for the HTTP/1.1 protocols available here; the fastest one available serves.
PROTOCOLS: dict[str, type[_Guarded]] = {"h11": GuardedH11Protocol}
HTTP_PROTOCOL = "h11"

if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(_Guarded, HttpToolsProtocol):
        """uvicorn's httptools protocol (the C parser) plus the request deadlines, the drain and
        the cap. httptools keeps no request state to ask, so the parser callbacks track it."""

        _state = Phase.IDLE

        def _phase(self) -> Phase:
            return self._state

        def _pipelined(self) -> bool:
            return bool(self.pipeline)

        def on_headers_complete(self) -> None:
            self._state = Phase.BODY
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            cycle = self.cycle
            # Both sides done (a refused body read to its end): the connection waits for the next.
            self._state = Phase.IDLE if cycle is not None and cycle.response_complete else Phase.DONE
            super().on_message_complete()

        def on_response_complete(self) -> None:
            if self._state is Phase.DONE and not self.pipeline:
                self._state = Phase.IDLE
            super().on_response_complete()

    PROTOCOLS["httptools"] = GuardedHttpToolsProtocol
    HTTP_PROTOCOL = "httptools"


def guarded_protocol(name: str | None = None) -> type[_Guarded]:
    """The guarded protocol class called ``name`` (default ``HTTP_PROTOCOL``)."""
    try:
        return PROTOCOLS[name or HTTP_PROTOCOL]
    except KeyError:
        raise Internal(f"HTTP protocol {name!r} is not available here (have: {', '.join(sorted(PROTOCOLS))})") from None

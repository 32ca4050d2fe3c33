"""HTTP/1.1 connections with the deadlines and the cap uvicorn's h11 protocol lacks.

uvicorn only times out a keep-alive connection idle after a response. Here, in addition:

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
import weakref
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from velesmem import limits

log = logging.getLogger("velesmem.daemon")


@dataclass(frozen=True)
class ConnectionPolicy:
    """The bounds every connection is held to."""

    max_connections: int
    request_timeout_s: float
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
        self._open: set[GuardedH11Protocol] = set()
        # Accepted, TLS handshake still running (a failed handshake never reports back: weak refs).
        self._handshaking: weakref.WeakSet[GuardedH11Protocol] = weakref.WeakSet()
        self.evicted = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._open)

    def accepted(self, conn: GuardedH11Protocol) -> None:
        """Note a connection just accepted, before its TLS handshake."""
        self._handshaking.add(conn)

    def admit(self, conn: GuardedH11Protocol) -> bool:
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

    def discard(self, conn: GuardedH11Protocol) -> None:
        self._open.discard(conn)

    def settled(self, quiet_since: float) -> bool:
        """True when no connection began waiting for a request after ``quiet_since`` (loop time):
        none was just accepted or just got an answer, so none is about to send a request. (Requests
        being served are counted by the drain; open GET streams do not hold it.)"""
        conns = [*self._open, *self._handshaking]
        return not any(c.waiting_since is not None and c.waiting_since > quiet_since for c in conns)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus the request deadlines, the bounded drain and the cap above."""

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

    # --- uvicorn protocol hooks --------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.table.admit(self):
            log.warning("refused a connection: %d connections are open and all busy "
                        "(VELESDB_MEMORY_HTTP_MAX_CONNECTIONS)", self.policy.max_connections)
            transport.abort()
            return
        self._await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.waiting_since = None
        self.table.discard(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._draining:
            self._drained += len(data)
            if self._drained > self.policy.drain_max_bytes:
                self.drop()
                return
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.SEND_BODY:
            # Answered before the body was read: h11 now discards the rest as it arrives.
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
        state = self.conn.their_state
        if self._draining:
            if state is h11.IDLE:  # the client finished its body; the connection lives on
                self._draining = False
                self._await_request()
            return  # the drain deadline stands, however the bytes arrive
        if state is h11.IDLE:
            if self.waiting_since is None:  # a new cycle began (the previous response ended)
                self._await_request()
            return  # a head still incomplete: its deadline is not pushed back by trickled bytes
        self.waiting_since = None
        if state is h11.SEND_BODY:
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
        if not self._draining and self.conn.their_state is h11.SEND_BODY and self.flow.read_paused:
            self._arm(self.policy.request_timeout_s)  # we stopped reading (body budget), not the client
            return
        self.drop()

    def drop(self) -> None:
        """Close at once: a client that missed its deadline (or lost its slot) gets no goodbye."""
        self._disarm()
        self.waiting_since = None
        self.table.discard(self)
        self.transport.abort()

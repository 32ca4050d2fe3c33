"""Where the compiler keeps what outlives one call: sources, compilation events, working contexts.

``ContextStore`` is the seam; ``MemoryContextStore`` keeps everything as internal facts of the
memory store (invisible to recall/list), ``InMemoryContextStore`` keeps it in a dict (tests, the
offline CLI, benchmarks). Internal ids are namespaced so they never collide with a fact's id.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from velesmem.ids import fnv1a64, working_context_id
from velesmem.limits import MAX_SAVINGS_EVENTS

KIND_SOURCE = "ctx_source"
KIND_EVENT = "ctx_event"
KIND_WORKING = "ctx_working"
KIND_WORKING_INDEX = "ctx_working_index"
EVENT_AT = "at"  # the key of an event's recording time (epoch seconds) in ``events()``


@dataclass(frozen=True)
class StoredSource:
    """The original bytes behind a handle: text, and the caller's base64 media when it had one."""

    content: str
    media_mime: str | None = None
    media_b64: str | None = None


@dataclass(frozen=True)
class SessionEntry:
    """One saved working context in a project's index."""

    session: str
    saved_at: int


class ContextStore(Protocol):
    """Persistence the compiler tools need; every method is safe to call from several threads.

    A ``ttl_seconds`` is a real expiry (None: permanent): once it passes, the source or event is
    gone, not just hidden. A source stored again keeps the longer of its two lifetimes.
    """

    def now(self) -> float: ...
    def put_source(self, content_hash: int, source: StoredSource, ttl_seconds: int | None) -> None: ...
    def get_source(self, content_hash: int) -> StoredSource | None: ...
    def record_event(self, project: str | None, event: dict[str, Any], ttl_seconds: int | None) -> None: ...
    def events(self, project: str | None) -> tuple[list[dict[str, Any]], bool]:
        """Recorded events (newest first), each with ``EVENT_AT``: when it was recorded."""
    def put_working(self, project: str, session: str, working: dict[str, Any]) -> tuple[int, int]: ...
    def get_working(self, project: str, session: str) -> dict[str, Any] | None: ...
    def sessions(self, project: str) -> list[SessionEntry]: ...


def source_fact_id(content_hash: int) -> int:
    """Internal id of a stored source (namespaced: the handle hash may equal a fact's id)."""
    return fnv1a64(f"veles-ctx-source:{content_hash}".encode())


def working_index_id(project: str) -> int:
    """Internal id of a project's working-context index."""
    return fnv1a64(f"veles-ctx-working-index:{project}".encode())


def _lifetime(ttl_seconds: int | None, expires_at: float | None, now: float) -> int | None:
    """The TTL to store a source with when it may already be stored until ``expires_at``: the
    longer lifetime wins (None is permanent), so one caller's short TTL never cuts short a
    source another compile asked to keep."""
    if ttl_seconds is None or expires_at is None:
        return None
    return max(ttl_seconds, math.ceil(expires_at - now))


def _add_session(index: list[SessionEntry], session: str, saved_at: int) -> list[SessionEntry]:
    rest = [e for e in index if e.session != session]
    return [SessionEntry(session, saved_at), *rest]


class MemoryContextStore:
    """Everything as internal facts of a ``MemoryService`` (put/get/scan/delete_internal)."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self._index_lock = threading.Lock()  # the project index is read-modify-write

    def now(self) -> float:
        return float(self.memory.now())

    def put_source(self, content_hash: int, source: StoredSource, ttl_seconds: int | None) -> None:
        fid = source_fact_id(content_hash)
        meta: dict[str, Any] = {"handle_hash": str(content_hash)}
        if source.media_b64 is not None:
            meta["media_mime"] = source.media_mime
            meta["media_b64"] = source.media_b64
        existing = self.memory.get_internal(fid)
        ttl = ttl_seconds
        if existing is not None and existing.kind == KIND_SOURCE:
            now = self.now()
            same = existing.content == source.content and existing.metadata == meta
            covered = existing.expires_at is None or (
                ttl_seconds is not None and now + ttl_seconds <= existing.expires_at)
            if same and covered:
                return  # already stored, same bytes, living at least as long: skip the write
            ttl = _lifetime(ttl_seconds, existing.expires_at, now)
        # The TTL is the fact's real expiry: past it the store hides and purges the source.
        self.memory.put_internal(fid, source.content, meta, kind=KIND_SOURCE, ttl_seconds=ttl)

    def get_source(self, content_hash: int) -> StoredSource | None:
        fact = self.memory.get_internal(source_fact_id(content_hash))  # None once expired
        if fact is None or fact.kind != KIND_SOURCE:
            return None
        return StoredSource(fact.content, fact.metadata.get("media_mime"), fact.metadata.get("media_b64"))

    def record_event(self, project: str | None, event: dict[str, Any], ttl_seconds: int | None) -> None:
        meta = dict(event)
        if project is not None:
            meta["project"] = project
        # Events need a unique id, not a content-derived one: two identical compiles are two events.
        fid = fnv1a64(b"veles-ctx-event:" + os.urandom(16) + str(time.time_ns()).encode())
        self.memory.put_internal(fid, "", meta, kind=KIND_EVENT, ttl_seconds=ttl_seconds)

    def events(self, project: str | None) -> tuple[list[dict[str, Any]], bool]:
        where = {"project": project} if project is not None else None
        facts, truncated = self.memory.scan_internal(KIND_EVENT, where=where, limit=MAX_SAVINGS_EVENTS)
        return [{**f.metadata, EVENT_AT: f.updated_at} for f in facts], truncated

    def put_working(self, project: str, session: str, working: dict[str, Any]) -> tuple[int, int]:
        fid = working_context_id(project, session)
        saved_at = int(self.now())
        content = json.dumps(working, ensure_ascii=False, separators=(",", ":"))
        with self._index_lock:
            self.memory.put_internal(
                fid, content, {"project": project, "session": session, "saved_at": saved_at},
                kind=KIND_WORKING,
            )
            index = _add_session(self.sessions(project), session, saved_at)
            self.memory.put_internal(
                working_index_id(project),
                json.dumps([[e.session, e.saved_at] for e in index], ensure_ascii=False),
                {"project": project},
                kind=KIND_WORKING_INDEX,
            )
        return fid, saved_at

    def get_working(self, project: str, session: str) -> dict[str, Any] | None:
        fact = self.memory.get_internal(working_context_id(project, session))
        if fact is None or fact.kind != KIND_WORKING:
            return None
        working: dict[str, Any] = json.loads(fact.content)
        return working

    def sessions(self, project: str) -> list[SessionEntry]:
        fact = self.memory.get_internal(working_index_id(project))
        if fact is None:
            return []
        entries = [SessionEntry(s, int(t)) for s, t in json.loads(fact.content)]
        # A working context forgotten with forget(id) drops out of the listing too.
        live = [e for e in entries if self.memory.get_internal(working_context_id(project, e.session))]
        return sorted(live, key=lambda e: -e.saved_at)


class InMemoryContextStore:
    """A process-local store with an injectable clock (tests, benchmarks, the offline CLI)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._sources: dict[int, tuple[StoredSource, float | None]] = {}
        self._events: list[tuple[dict[str, Any], float | None]] = []  # newest first, with expiry
        self._working: dict[tuple[str, str], dict[str, Any]] = {}
        self._index: dict[str, list[SessionEntry]] = {}

    def now(self) -> float:
        return self._clock()

    def put_source(self, content_hash: int, source: StoredSource, ttl_seconds: int | None) -> None:
        now = self.now()
        with self._lock:
            entry = self._live_source(content_hash, now)
            ttl = ttl_seconds if entry is None else _lifetime(ttl_seconds, entry[1], now)
            self._sources[content_hash] = (source, None if ttl is None else now + ttl)

    def get_source(self, content_hash: int) -> StoredSource | None:
        with self._lock:
            entry = self._live_source(content_hash, self.now())
            return None if entry is None else entry[0]

    def _live_source(self, content_hash: int, now: float) -> tuple[StoredSource, float | None] | None:
        entry = self._sources.get(content_hash)
        if entry is not None and entry[1] is not None and entry[1] <= now:
            del self._sources[content_hash]  # expired: purged
            return None
        return entry

    def record_event(self, project: str | None, event: dict[str, Any], ttl_seconds: int | None) -> None:
        meta = dict(event)
        if project is not None:
            meta["project"] = project
        now = self.now()
        meta[EVENT_AT] = now
        with self._lock:
            self._purge_events(now)
            self._events.insert(0, (meta, None if ttl_seconds is None else now + ttl_seconds))

    def events(self, project: str | None) -> tuple[list[dict[str, Any]], bool]:
        with self._lock:
            self._purge_events(self.now())
            hits = [e for e, _ in self._events if project is None or e.get("project") == project]
        return hits[:MAX_SAVINGS_EVENTS], len(hits) > MAX_SAVINGS_EVENTS

    def _purge_events(self, now: float) -> None:
        self._events = [(e, exp) for e, exp in self._events if exp is None or exp > now]

    def put_working(self, project: str, session: str, working: dict[str, Any]) -> tuple[int, int]:
        saved_at = int(self.now())
        with self._lock:
            self._working[(project, session)] = json.loads(json.dumps(working))
            self._index[project] = _add_session(self._index.get(project, []), session, saved_at)
        return working_context_id(project, session), saved_at

    def get_working(self, project: str, session: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._working.get((project, session))
            return None if found is None else json.loads(json.dumps(found))

    def sessions(self, project: str) -> list[SessionEntry]:
        with self._lock:
            return sorted(self._index.get(project, []), key=lambda e: -e.saved_at)

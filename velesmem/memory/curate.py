"""Curation of each remembered fact: the older fact it duplicates and the version it changes.

Both checks read the new fact's nearest neighbours in the vector index (about the cost of a
recall), so ``remember`` does not wait for them where the store keeps a curation cursor
(``CurationStore``: SQLite). Once a fact commits, the Runtime's curation lane (``Curator``) reads
the facts embedded past the cursor, in write order and a batch at a time, finds among the facts
written before each its original (``duplicate_of``, when duplicates are on) and the older version
it changes (``supersedes``), and writes those edges and the cursor's new place in one background
transaction (an edge whose end was forgotten meanwhile is skipped). A crash loses no check: the
lane resumes from the cursor. While remembers keep coming, the lane takes a small share of the
time (``CURATE_BUSY_SHARE``) and catches up when they pause.

A store without a cursor (a shared PostgreSQL), a MemoryService with no Runtime and a fact
stored without a vector (the model still loading) are checked before the write instead, their
edges committed with the fact. ``MemoryService.remember`` returns once its own fact is checked
(read your writes); the MCP tool and ``submit_remember`` answer at the commit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from velesmem import limits
from velesmem.config import Settings
from velesmem.errors import Internal, VelesmemError
from velesmem.memory import duplicates as mdup
from velesmem.memory.supersede import SUPERSEDES, VersionStore, find_superseded
from velesmem.store import CurationStore, StoredFact, Uncurated

log = logging.getLogger(__name__)

# neighbours both checks look at (the new fact's own vector is searched one wider: it may be
# among them, already stored)
NEIGHBOURS = max(limits.SUPERSEDE_CANDIDATES, mdup.CANDIDATES)


class CurationLane(Protocol):
    """What a MemoryService asks of the lane around one write."""

    def watch(self, key: int, checked: threading.Event) -> None:
        """Set ``checked`` once the fact stored under ``key`` has been checked."""

    def wake(self) -> None:
        """A fact to check was committed."""

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every committed fact is checked (False on timeout)."""

    def backlog(self) -> int:
        """Facts committed and not checked yet."""


def derive(store: VersionStore, settings: Settings, model: str, key: int, content: str,
           metadata: dict[str, Any], vector: np.ndarray | None, now: float) -> list[tuple[int, str]]:
    """The (target, relation) edges a fact about to be stored under ``key`` gets: the version
    it changes (``supersedes``) and, when duplicates are on, its group's original
    (``duplicate_of``), among the live facts."""
    near = _nearest(store, key, vector)
    rows = None if near is None else store.facts([k for k, _ in near], now)
    return _decide(store, settings, model, key, content, metadata, vector, now, near, rows, None)


def _decide(store: VersionStore, settings: Settings, model: str, key: int, content: str,
            metadata: dict[str, Any], vector: np.ndarray | None, now: float,
            near: list[tuple[int, float]] | None, rows: Mapping[int, StoredFact] | None,
            created_at: float | None) -> list[tuple[int, str]]:
    """Both checks over the neighbours ``near`` (None: no vector check) whose ``rows`` were
    read; with ``created_at``, only facts created no later are candidates."""
    if near is not None and rows is not None:
        near = [(k, c) for k, c in near if k in rows
                and (created_at is None or rows[k].created_at <= created_at)][:NEIGHBOURS]
        rows = {k: rows[k] for k, _ in near}
    out: list[tuple[int, str]] = []
    old = find_superseded(store, key, content, metadata, vector, now, near=near, rows=rows)
    if old is not None:
        out.append((old, SUPERSEDES))
    if settings.dedup:
        original = mdup.find_original(store, store, key, content, metadata,
                                      settings.duplicate_scope_keys, now, vector,
                                      mdup.thresholds(model), near=near, rows=rows)
        if original is not None:
            out.append((original, mdup.RELATION))
    return out


def _nearest(store: VersionStore, key: int,
             vector: np.ndarray | None) -> list[tuple[int, float]] | None:
    """The nearest live facts to ``vector`` (key, cosine), read once for both checks; None
    without a vector or while the index loads (no vector check)."""
    if vector is None:
        return None
    try:
        found = store.vector_search(vector, NEIGHBOURS + 1, None)
    except Internal:
        return None
    return [(int(k), float(c)) for k, c in found if int(k) != key]


def _nearest_batch(store: LaneStore, items: Sequence[Uncurated]) -> list[list[tuple[int, float]]]:
    """The nearest live facts to each of ``items`` (in write order), none written after it in
    the batch, the searches of the whole batch made together: a first pass for every fact,
    then a wider one (up to ``CURATE_LATER_SLACK`` more) for those whose nearest include facts
    of the batch written after them. Raises ``Internal`` while the index loads (the lane tries
    again later)."""
    n = NEIGHBOURS + 1
    later = [frozenset(x.key for x in items[i + 1:]) for i in range(len(items))]
    found = store.vector_search_many([item.vector for item in items], [n] * len(items))
    again = [i for i, near in enumerate(found)
             if len(near) == n and any(k in later[i] for k, _ in near)]
    if again:
        wider = store.vector_search_many(
            [items[i].vector for i in again],
            [n + min(len(later[i]), limits.CURATE_LATER_SLACK) for i in again])
        for i, near in zip(again, wider, strict=True):
            found[i] = near
    return [[(k, c) for k, c in near if k != item.key and k not in skip]
            for item, near, skip in zip(items, found, later, strict=True)]


class LaneStore(VersionStore, CurationStore, Protocol):
    """The roles the lane uses: the checks' reads, and the cursor."""


class Curator:
    """The lane over a store's curation cursor; the Runtime runs ``run`` in its thread."""

    def __init__(self, store: LaneStore, settings: Settings, model: Callable[[], str],
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.settings = settings
        self._model = model
        self._clock = clock
        self._cv = threading.Condition()
        self._generation = 0  # bumped by every wake
        self._idle_generation = -1  # the generation an empty pass started at, last
        self._last_wake = 0.0  # monotonic
        self._busy = False
        self._stopped = False
        self._thread: threading.Thread | None = None  # the one running ``run``
        self._watchers: dict[int, list[tuple[int, threading.Event]]] = {}
        self.checked = 0
        self._last_batch_s = 0.0

    # --- around a write ----------------------------------------------------------------------
    def watch(self, key: int, checked: threading.Event) -> None:
        with self._cv:
            if self._stopped:
                checked.set()
                return
            self._watchers.setdefault(key, []).append((self._generation, checked))

    def wake(self) -> None:
        with self._cv:
            self._generation += 1
            self._last_wake = time.monotonic()
            self._cv.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until a pass found nothing left to check after the last commit; False on
        timeout."""
        with self._cv:
            return self._cv.wait_for(
                lambda: self._stopped or (self._idle_generation == self._generation
                                          and not self._busy), timeout)

    # --- the worker --------------------------------------------------------------------------
    def stop(self) -> None:
        """End ``run`` once its batch in flight is written; what is left is checked at the next
        start. A caller on another thread returns only after that batch, so no fact committed
        after ``stop`` is checked by this lane."""
        with self._cv:
            self._stopped = True
            watchers, self._watchers = self._watchers, {}
            self._cv.notify_all()
            if threading.current_thread() is not self._thread:
                self._cv.wait_for(lambda: not self._busy)
        for events in watchers.values():
            for _, event in events:
                event.set()

    def run(self, stop: threading.Event) -> None:
        """Check the facts past the cursor until ``stop``, ``CURATE_BATCH`` per transaction."""
        self._thread = threading.current_thread()
        try:
            self._loop(stop)
        finally:  # a ``stop`` waiting for the batch in flight must not wait for a dead lane
            with self._cv:
                self._busy = False
                self._cv.notify_all()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            with self._cv:
                if self._stopped:
                    return
                generation = self._generation
                self._busy = True
            try:
                done = self.check_next()
            except Exception as exc:  # the cursor stays: the same facts are tried again
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()
                if stop.is_set():
                    return
                if isinstance(exc, VelesmemError):
                    log.warning("could not check remembered facts for duplicates and updates "
                                "(trying again): %s", exc.message)
                else:
                    log.exception("could not check remembered facts for duplicates and updates "
                                  "(trying again)")
                stop.wait(limits.CURATE_RETRY_S)
                continue
            with self._cv:
                self._busy = False
                if not done:
                    self._idle_generation = generation
                    self._release(generation)
                self._cv.notify_all()
                if not done:
                    if self._generation == generation and not self._stopped:
                        self._cv.wait(limits.CURATE_POLL_S)
                    continue
                flowing = time.monotonic() - self._last_wake < limits.CURATE_QUIET_S
                waited_for = bool(self._watchers)
            if flowing and not waited_for:  # remembers keep coming: a small share of the time
                stop.wait(min(self._last_batch_s * (1 - limits.CURATE_BUSY_SHARE)
                              / limits.CURATE_BUSY_SHARE, limits.CURATE_MAX_PAUSE_S))

    def check_next(self) -> int:
        """Check the next batch past the cursor and write its edges with the cursor's new place
        (one transaction); how many facts it checked (0: none left)."""
        started = time.thread_time()  # this thread's CPU: not the time it waited for others
        now = float(self._clock())
        items = self.store.uncurated(limits.CURATE_BATCH, now)
        if not items:
            return 0
        model = self._model()
        nearest = _nearest_batch(self.store, items)
        # a fact committed after the batch was read is in the index already, written after
        # every fact of the batch (its created_at may equal theirs): never their original
        later = self.store.written_after(sorted({k for near in nearest for k, _ in near}),
                                         items[-1].cursor)
        if later:
            nearest = [[(k, c) for k, c in near if k not in later] for near in nearest]
        # the candidates' rows of the whole batch in one read
        rows = self.store.facts(sorted({k for near in nearest if near for k, _ in near}), now)
        edges: list[tuple[int, int, str]] = []
        for item, near in zip(items, nearest):
            for target, relation in _decide(self.store, self.settings, model, item.key,
                                            item.content, item.metadata, item.vector, now, near,
                                            None if near is None else rows, item.created_at):
                edges.append((item.key, target, relation))
        self.store.curate(tuple(edges), items[-1].cursor, now).result()
        self.checked += len(items)
        with self._cv:
            keys = {item.key for item in items}
            self._release(None, keys)
        self._last_batch_s = time.thread_time() - started
        return len(items)

    def _release(self, before: int | None, keys: set[int] | None = None) -> None:
        """Set the watchers of ``keys`` (all keys when None) registered before generation
        ``before`` (any, when None) (hold the condition)."""
        for key in list(self._watchers) if keys is None else keys & self._watchers.keys():
            kept = []
            for generation, event in self._watchers[key]:
                if before is None or generation < before:
                    event.set()
                else:
                    kept.append((generation, event))
            if kept:
                self._watchers[key] = kept
            else:
                del self._watchers[key]

    def backlog(self) -> int:
        """Facts committed and not checked yet."""
        return self.store.curation_backlog()


__all__ = ["CurationLane", "Curator", "LaneStore", "derive"]

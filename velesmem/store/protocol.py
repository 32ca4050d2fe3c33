"""The storage protocol: what the services need from a backend, at the level of the domain.

The protocol is a set of small roles (``velesmem.store.roles``: facts, sources, search, the
serving embedding space, a second space + journal, jobs, expiry, maintenance, tokens, and the
lifecycle); ``Store`` is their union, what a backend implements and the Runtime holds. Each
service is given only the roles it uses. The values they carry are in ``velesmem.store.types``;
the metadata predicate tree in ``velesmem.store.predicates``; the domain rules written once for
every SQL dialect (the feedback clamp, liveness, job states) in ``velesmem.store.rules``. Only
backends (``velesmem.store.sqlite``, ``velesmem.store.postgres``) speak SQL.

Keys: a fact or edge id is a u64 on the wire; the protocol carries its **key**, the int64 with
the same bits (``velesmem.ids.to_i64``), which is what SQLite, PostgreSQL ``bigint`` and FAISS
store. Candidate sets and rankings travel as numpy int64 arrays.

Writes return a ``concurrent.futures.Future`` that resolves once the write's transaction has
committed (``.result()`` for a blocking caller, ``asyncio.wrap_future`` for the event loop, so
no thread waits on it). A write that fails changes nothing and raises from its future.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol, runtime_checkable

import numpy as np

from velesmem.store.roles import (
    ROLES,
    EmbeddingStore,
    ExpiryStore,
    FactStore,
    JobStore,
    LifecycleStore,
    MaintenanceStore,
    SearchStore,
    SourceStore,
    SpaceStore,
    TokenStore,
)
from velesmem.store.types import (
    ENTITY_HUB_KIND,
    HUB_NAME_KEY,
    HUB_SOURCE_KEY,
    JOB_STATES,
    JOURNAL_ENTRY_BYTES,
    TERMINAL_STATES,
    Counts,
    Edge,
    FactWrite,
    GraphWrite,
    HubWrite,
    Identity,
    Job,
    JournalState,
    Problem,
    RestoredFact,
    RestoreWrite,
    Space,
    StoredFact,
    TokenRecord,
    Uncurated,
    WarmProgress,
)


class Store(LifecycleStore, FactStore, SourceStore, SearchStore, EmbeddingStore, SpaceStore,
            JobStore, ExpiryStore, MaintenanceStore, TokenStore, Protocol):
    """One open store: every role. Every method is safe to call from several threads."""

    def close(self) -> None:
        """Finish pending writes, persist derived state, release every resource."""


@runtime_checkable
class SharedStore(Protocol):
    """A store many daemons share (PostgreSQL): one may move it to a new embedding space, and
    its server may be unreachable for a while. The Runtime follows both."""

    @property
    def down_reason(self) -> str | None:
        """Why the database cannot be reached right now (None while it answers)."""

    def watch(self, stop: threading.Event, on_serving: Callable[[int], None]) -> None:
        """Block until ``stop``, calling ``on_serving(space_id)`` whenever the serving space
        may have moved, and keeping ``down_reason`` current."""

    def recorded_serving(self) -> Space | None:
        """The serving space the database records, if not the one this store serves."""

    def follow(self, space: Space) -> None:
        """Serve ``space`` from now on."""


@runtime_checkable
class CurationStore(Protocol):
    """A store that keeps a durable cursor over its embedded facts in write order (SQLite, one
    writer): the curation lane checks each fact for duplicates and updates after it is
    acknowledged and moves the cursor with the edges it writes. A store without one (a shared
    PostgreSQL) has each fact checked before its write instead."""

    def uncurated(self, limit: int, now: float) -> list[Uncurated]:
        """Up to ``limit`` live user facts embedded in the serving space past the cursor, in
        write order."""

    def vector_search_many(self, queries: Sequence[np.ndarray],
                           ns: Sequence[int]) -> list[list[tuple[int, float]]]:
        """``vector_search(query, n, None)`` of each query and its n, in one pass: the lane
        searches the neighbours of a whole batch (the candidates' vectors read once)."""

    def curation_backlog(self) -> int:
        """How many embedded facts lie past the cursor."""

    def written_after(self, keys: Sequence[int], through: tuple[int, int]) -> set[int]:
        """Those of ``keys`` whose vector in the serving space was written past the cursor
        place ``through`` (after the facts up to it, whatever their ``created_at``)."""

    def curate(self, edges: tuple[tuple[int, int, str], ...], through: tuple[int, int],
               now: float) -> Future[int]:
        """Write ``edges`` (src, dst, relation; skipped where an end is gone) and move the
        cursor to ``through`` in one transaction, yielding to other writes; resolves to the
        edges written."""


__all__ = ["ENTITY_HUB_KIND", "HUB_NAME_KEY", "HUB_SOURCE_KEY", "JOB_STATES", "JOURNAL_ENTRY_BYTES",
           "ROLES", "TERMINAL_STATES", "Counts", "Edge", "EmbeddingStore", "ExpiryStore",
           "FactStore", "FactWrite", "GraphWrite", "HubWrite", "Identity", "Job", "JobStore",
           "JournalState", "LifecycleStore", "MaintenanceStore", "Problem", "RestoreWrite",
           "RestoredFact", "SearchStore", "SharedStore", "SourceStore", "Space", "SpaceStore",
           "Store", "StoredFact", "TokenRecord", "TokenStore", "Uncurated", "WarmProgress",
           "CurationStore"]

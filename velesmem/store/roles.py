"""The store roles: small protocols, one per concern, that services are given instead of a store.

A backend (``velesmem.store.sqlite``, ``velesmem.store.postgres``) implements every role; a
service annotates only the roles it calls, so what it may do to the store is read off its
constructor. ``tests/store/test_store_roles.py`` checks both directions with ``inspect``: every
backend implements every member with the declared signature, and every call site in velesmem
passes only arguments a role declares.

    LifecycleStore    open/close, warming, where the store is (the Runtime)
    FactStore         user facts, edges, feedback and confidence history, graph writes;
                      reads by key and by page
    SourceStore       internal facts: entity hubs, compiler sources, events, working contexts
    SearchStore       metadata predicates, BM25 text search, vector search, scores, confidences
    EmbeddingStore    the serving embedding space and its backlog of facts without a vector
    SpaceStore        a second space being built, and the journal of writes meanwhile (migration)
    JobStore          durable background jobs (extraction, migration)
    ExpiryStore       TTLs: the next expiry, the sweep, and the listener told of new ones
    MaintenanceStore  verify, repair, export, and restoring an export
    TokenStore        bearer tokens (the daemon's auth)

Writes return a ``concurrent.futures.Future`` that resolves once the write's transaction has
committed; a write that fails changes nothing and raises from its future.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

import numpy as np

from velesmem.spawner import Spawner
from velesmem.store.predicates import Predicate
from velesmem.store.types import (
    ConfidenceEvent,
    Counts,
    Edge,
    FactWrite,
    GraphWrite,
    Identity,
    Job,
    JournalState,
    Problem,
    RestoreWrite,
    Space,
    StoredFact,
    TokenRecord,
    WarmProgress,
)


def _never() -> bool:
    return False


class LifecycleStore(Protocol):
    """Opening, warming and closing a store (the Runtime's)."""

    backend: str  # "sqlite", "postgres"
    location: str  # a directory, or a database URL without its password
    warm_done: bool  # the serving space's vectors are searchable

    def start(self, spawner: Spawner) -> None:
        """Start the background workers (writer, indexer) on threads of the Runtime's
        ``spawner``: a backend never creates a thread itself."""

    def warm(self, progress: WarmProgress, cancelled: Callable[[], bool] = _never) -> None:
        """Make the serving space's vectors searchable (load, replay or rebuild; blocking);
        returns early once ``cancelled()`` (the process is closing)."""

    def close(self) -> None:
        """Finish pending writes, persist derived state, release every resource."""


class FactStore(Protocol):
    """User facts and the typed edges between facts: writes, reads by key, pages, counts."""

    def remember(self, w: FactWrite) -> Future[int]:
        """Upsert a user fact, its vector and its links; resolves to its key."""

    def relate(self, src: int, dst: int, relation: str, now: float) -> Future[int]:
        """Add the edge (idempotent per triple); NotFound if an end is not a live fact."""

    def unrelate(self, src: int, dst: int, relation: str) -> Future[int]:
        """Remove the edge; resolves to the number removed (0 or 1)."""

    def forget(self, key: int, now: float) -> Future[bool]:
        """Delete a live fact, its edges and orphaned entity hubs; False when absent."""

    def feedback(self, key: int, success: bool, now: float) -> Future[float]:
        """Atomically nudge a live user fact's confidence (clamped to [0, 1] by the rule in
        ``velesmem.store.rules``); resolves to the new value. The change is recorded in the
        fact's confidence history in the same transaction."""

    def confidence_history(self, key: int, limit: int) -> list[ConfidenceEvent]:
        """Up to ``limit`` recorded changes of fact ``key``'s confidence, newest first (at
        most ``limits.MAX_CONFIDENCE_EVENTS`` are kept per fact; forget deletes them)."""

    def write_graph(self, graph: GraphWrite, *, job: str | None = None,
                    result: dict[str, Any] | None = None,
                    background: bool = False) -> Future[list[int]]:
        """Apply ``graph`` in one transaction (resolves to the keys of its facts); with ``job``
        that job becomes committed with ``result`` in the same transaction. ``background``
        work (autograph) yields to every other write."""

    def facts(self, keys: Sequence[int], now: float, *,
              user_only: bool = True) -> dict[int, StoredFact]:
        """The live facts among ``keys`` (user facts only unless ``user_only`` is False)."""

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (dst, relation) of edges leaving ``key`` to live facts, by edge key."""

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (src, relation) of edges arriving at ``key`` from live facts."""

    def related_keys(self, keys: Sequence[int], relations: Sequence[str]) -> set[int]:
        """The keys among ``keys`` that an edge of one of ``relations`` leaves or arrives at,
        read in one query (liveness of the other end unchecked: a superset of what
        ``out_edges``/``in_edges`` would show). A key not in the answer has no such edge, so
        its per-key walks can be skipped."""

    def targets(self, key: int) -> list[int]:
        """The dst of every edge leaving ``key``."""

    def counts(self, now: float) -> Counts:
        """Live user facts, and every edge."""

    def count_by(self, key: str, now: float) -> dict[str, int]:
        """Live user facts per string value of their top-level metadata ``key`` (facts
        without it, or with another type of value, are not counted)."""

    def page(self, after: int | None, limit: int, predicate: Predicate, *,
             include_internal: bool, now: float) -> list[StoredFact]:
        """Up to ``limit`` live facts after u64 id ``after`` (exclusive), in u64 order."""


class SourceStore(Protocol):
    """Internal facts (scaffolding: entity hubs, compiler sources, events, working contexts),
    never shown by recall or list unless asked."""

    def put_internal(self, key: int, content: str, metadata_json: str, kind: str, now: float,
                     expires_at: float | None = None) -> Future[int]:
        """Upsert internal fact ``key`` of ``kind``; resolves to its key."""

    def delete_internal(self, key: int) -> Future[bool]:
        """Delete internal fact ``key``; False when absent."""

    def get_internal(self, key: int, now: float) -> StoredFact | None:
        """Live internal fact ``key`` (None: absent or expired)."""

    def scan_internal(self, kind: str, predicate: Predicate, limit: int,
                      now: float) -> list[StoredFact]:
        """Up to ``limit`` live internal facts of ``kind``, newest write first."""


class SearchStore(Protocol):
    """The candidates and scores a ranking needs: metadata, text and vectors."""

    def confidences(self, keys: Sequence[int], now: float) -> dict[int, float]:
        """Learned confidence of each live user fact among ``keys``."""

    def matching(self, predicate: Predicate) -> np.ndarray:
        """Sorted int64 keys of every fact whose metadata satisfies ``predicate`` (liveness is
        the caller's to check)."""

    def text_search(self, query: str,
                    allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(keys ascending, BM25 > 0) of the user facts matching the query's words, restricted
        to ``allowed`` (sorted keys) when given."""

    @property
    def parallel_search(self) -> bool:
        """Whether ``text_search`` and the vector side take long enough here that running them
        on two threads pays for the hop between them (answered from memory, no query)."""

    def vector_search(self, query: np.ndarray, n: int,
                      allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """Top ``n`` live user facts by inner product in the serving space, best first."""

    def vector_candidates(self, query: np.ndarray, n: int,
                          allowed: np.ndarray | None) -> np.ndarray:
        """Keys (int64, any order) holding the top ``n`` live user facts by inner product in the
        serving space: ``vector_search``'s set before its exact scores, which ``scored`` reads
        together with whatever else a ranking needs scored."""

    def scored(self, query: np.ndarray, keys: Sequence[int],
               now: float) -> dict[int, tuple[float, float]]:
        """(exact inner product with ``query`` in the serving space, confidence) of each live
        user fact among ``keys``, in one read; the product is 0.0 for a fact with no vector."""

    def vector_top(self, query: np.ndarray, n: int, allowed: np.ndarray | None,
                   now: float) -> list[tuple[int, float, float]]:
        """(key, exact inner product, confidence) of the ``n`` live user facts of highest
        product among ``vector_candidates``'s, best first, ties by ascending key: what a
        vector-only ranking needs, read in as few rows as the backend can."""


class EmbeddingStore(Protocol):
    """The serving embedding space: which embedder filled the store, and the facts written
    before it was ready (the backlog ``unembedded`` / ``fill_vectors`` works off)."""

    def provenance(self) -> Identity | None:
        """The identity that filled the store, or None while it holds no vector."""

    def migrated_from(self) -> str | None:
        """The model that served the store before its last committed migration, if any."""

    def settle(self, identity: Identity, now: float) -> Space:
        """Make ``identity`` the serving space's (a new or empty store), or refuse with
        EmbedderMismatch when another embedder filled it."""

    def serving_space(self) -> Space | None:
        """The space recall searches (None: no embedder settled yet)."""

    def unembedded(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        """(key, content) of up to ``limit`` live user facts with no vector in the serving
        space and a key above ``after``, by key: those written before the embedder was ready
        (none while no space serves)."""

    def fill_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        """Give the serving space's vectors to the facts among ``items`` that exist and have
        none yet; nothing when ``space`` no longer serves. Resolves to how many were written."""


class SpaceStore(Protocol):
    """A second embedding space built beside the serving one, and the journal of the writes
    made meanwhile (the online migration's)."""

    def create_space(self, identity: Identity, witness: tuple[float, ...],
                     now: float) -> Future[Space]:
        """A new, empty space being built beside the serving one (refused while one exists)."""

    def building_space(self) -> Space | None:
        """The space being built, if any."""

    def load_building_index(self) -> None:
        """Make the building space searchable again after a restart (its vectors are kept)."""

    def space_destination(self, space: int) -> str:
        """Where a space's derived data lives (the migration's "generated destination")."""

    def put_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        """Write vectors into a building space for the live user facts among the keys (others
        are skipped); resolves to how many were written."""

    def delete_vectors(self, space: int, keys: Sequence[int]) -> Future[int]:
        """Drop the vectors of ``keys`` from a building space; resolves to how many."""

    def space_count(self, space: int) -> int:
        """How many vectors ``space`` holds."""

    def facts_after(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        """(key, content) of up to ``limit`` live user facts with a key above ``after``, by key
        (the base copy's batches)."""

    def start_journal(self, epoch: str, max_bytes: int) -> Future[None]:
        """From now on every write to a fact (or the edges leaving it) is journaled; a write
        that would pass ``max_bytes`` is refused (InvalidInput), never left untracked."""

    def journal(self, limit: int) -> tuple[list[tuple[int, int]], JournalState]:
        """The oldest ``limit`` entries (seq, fact key) and the journal's state."""

    def ack_journal(self, upto: int) -> Future[None]:
        """Drop the entries up to seq ``upto`` (replayed)."""

    def stop_journal(self) -> Future[None]:
        """Stop journaling and drop what is left."""

    def activate_space(self, space: int, witness: tuple[float, ...]) -> Future[None]:
        """Make the building space the serving one, with its identity as provenance, in one
        transaction (the old space is kept until ``drop_space``)."""

    def drop_space(self, space: int) -> Future[None]:
        """Delete a space that does not serve: its vectors and its derived files."""


class JobStore(Protocol):
    """Durable background jobs: accepted → running → committed or failed (see ``rules``)."""

    def create_job(self, job: Job, *, max_pending: int) -> Future[tuple[Job, bool]]:
        """Record ``job`` unless its id exists: resolves to (the stored job, created). Refused
        (InvalidInput) when ``max_pending`` jobs of its kind are not terminal yet."""

    def update_job(self, job_id: str, now: float, *, state: str | None = None,
                   output: str | None = None, result: dict[str, Any] | None = None,
                   error: str | None = None) -> Future[Job]:
        """Change a job; reaching a terminal state drops its payload and output."""

    def get_job(self, job_id: str) -> Job | None:
        """The job with id ``job_id`` (None: unknown)."""

    def pending_jobs(self, kind: str, limit: int) -> list[Job]:
        """Non-terminal jobs of ``kind``, oldest first (running ones first: resumed)."""

    def recent_jobs(self, kind: str, limit: int) -> list[Job]:
        """Jobs of ``kind`` in any state, newest first (created_at, then id, descending): a
        journal to show, read-only; at most ``limit``."""

    def claim_job(self, kind: str, now: float) -> Future[Job | None]:
        """Atomically move the oldest accepted job of ``kind`` to running (None: none left).
        With several daemons on one database, each job is claimed by exactly one."""


class ExpiryStore(Protocol):
    """Facts with a TTL: the Runtime's sweeper sleeps until ``next_expiry`` and is woken by
    ``expiry_listener`` when a write brings it closer."""

    expiry_listener: Callable[[float], None] | None

    def next_expiry(self) -> float | None:
        """The earliest expiry still stored (None: nothing expires)."""

    def purge_expired(self, now: float) -> Future[int]:
        """Delete every fact whose expiry has passed; resolves to how many."""


class MaintenanceStore(Protocol):
    """Integrity and whole-store copies: verify, repair, export and restoring an export."""

    def verify(self) -> list[Problem]:
        """Every broken invariant (SQL vs derived structures), without changing anything."""

    def repair(self, report: Callable[[str], None],
               embed: Callable[[list[str]], np.ndarray] | None = None) -> list[Problem]:
        """Rebuild what is derived (re-embedding with ``embed`` where vectors are missing);
        return what could not be repaired."""

    def export(self, now: float, *, include_internal: bool) -> Iterator[StoredFact | Edge]:
        """Every live fact (u64 id order), then every edge, from one consistent snapshot."""

    def restore(self, key: int, confidence: float, successes: int, failures: int,
                created_at: float, updated_at: float,
                expires_at: float | None) -> Future[bool]:
        """Set a stored fact's learned confidence, counts and times as an export recorded them
        (``import``); False when no fact has ``key``."""

    def restore_all(self, write: RestoreWrite) -> Future[int]:
        """Write an import in ONE transaction (resolves to the facts plus edges written); an
        edge whose end is not a live fact fails it, and nothing is written."""


class TokenStore(Protocol):
    """The bearer tokens a daemon accepts (``velesmem.daemon.auth``). Each write has committed
    when it returns. ``velesdb-memory token`` changes them while a daemon serves the store, and
    the daemon looks each request's token up, so a revocation holds at once."""

    def put_token(self, name: str, digest: str, now: float) -> TokenRecord:
        """Record a live token; InvalidInput when a live token already has ``name``."""

    def tokens(self) -> list[TokenRecord]:
        """Every token, live and revoked, oldest first."""

    def revoke_token(self, name: str, now: float) -> TokenRecord | None:
        """Revoke the live token named ``name``; None when there is none."""

    def find_token_by_hash(self, digest: str) -> TokenRecord | None:
        """The token whose digest is ``digest``, live or revoked (None: unknown)."""

    def close(self) -> None:
        """Release the connection."""


ROLES: tuple[type, ...] = (LifecycleStore, FactStore, SourceStore, SearchStore, EmbeddingStore,
                           SpaceStore, JobStore, ExpiryStore, MaintenanceStore, TokenStore)

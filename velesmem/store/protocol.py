"""The storage protocol: what the services need from a backend, at the level of the domain.

Services speak this protocol and nothing else: facts (user facts and internal scaffolding),
typed edges, metadata predicates (``velesmem.store.predicates``), a text index answering
BM25-scored candidates, vectors per embedding space, learned confidence, TTLs, durable jobs and
compiler artefacts. Only backends (``velesmem.store.sqlite``, ``velesmem.store.postgres``) speak
SQL.

Keys: a fact or edge id is a u64 on the wire; the protocol carries its **key**, the int64 with
the same bits (``velesmem.ids.to_i64``), which is what SQLite, PostgreSQL ``bigint`` and FAISS
store. Candidate sets and rankings travel as numpy int64 arrays.

Writes return a ``concurrent.futures.Future`` that resolves once the write's transaction has
committed (``.result()`` for a blocking caller, ``asyncio.wrap_future`` for the event loop, so
no thread waits on it). A write that fails changes nothing and raises from its future.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from velesmem.store.predicates import Predicate

ENTITY_HUB_KIND = "entity_hub"
HUB_NAME_KEY = "_veles_entity"  # a hub's canonical name, in its (reserved) metadata
HUB_SOURCE_KEY = "_veles_source"  # what made the hub: "entity" or an identifier kind


@dataclass(frozen=True)
class Identity:
    """What embeds the store's facts: model name and dimension (the store's provenance)."""

    model: str
    dimension: int


@dataclass(frozen=True)
class Space:
    """An embedding space: the vectors one embedder produced. ``witness`` is that embedder's
    vector of a fixed probe text, so a model changed under the same name is noticed."""

    id: int
    identity: Identity
    witness: tuple[float, ...] = ()


@dataclass(frozen=True)
class FactWrite:
    """A validated remember: everything the write needs, computed outside the store. ``vector``
    None: the embedder is not ready yet; the fact is stored (and acknowledged) without one and
    the backlog (``unembedded`` / ``fill_vectors``) embeds it later."""

    key: int
    content: str
    metadata_json: str
    vector: np.ndarray | None
    now: float
    expires_at: float | None
    links: tuple[tuple[int, str], ...] = ()  # (target key, relation)


@dataclass(frozen=True)
class HubWrite:
    """An entity hub to upsert: internal fact ``key`` named ``name`` (content
    ``Entity: <name>``), with ``attributes`` merged into its metadata (later values win)."""

    key: int
    name: str
    source: str = "entity"  # what made it: entity (an extraction) or an identifier kind
    attributes: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class GraphWrite:
    """One atomic change to the graph: user facts (with vectors), entity hubs, and edges
    (src, dst, relation) — an edge whose end no longer exists is skipped, not an error."""

    now: float
    facts: tuple[FactWrite, ...] = ()
    hubs: tuple[HubWrite, ...] = ()
    edges: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True)
class RestoredFact:
    """A fact as an export recorded it, checked and (a user fact) re-embedded: written with its
    metadata verbatim (``_veles_author`` included), learned state, times and expiry."""

    key: int
    content: str
    metadata_json: str
    kind: str | None  # None: a user fact, which then carries its ``vector``
    vector: np.ndarray | None
    confidence: float
    successes: int
    failures: int
    created_at: float
    updated_at: float
    expires_at: float | None


@dataclass(frozen=True)
class RestoreWrite:
    """A whole import: facts, then edges (src, dst, relation) whose ends must be live facts
    once the facts are written. All of it commits, or none of it (NotFound, InvalidInput)."""

    now: float
    facts: tuple[RestoredFact, ...] = ()
    edges: tuple[tuple[int, int, str], ...] = ()


JOB_STATES = ("accepted", "running", "committed", "failed")
TERMINAL_STATES = ("committed", "failed")


@dataclass(frozen=True)
class Job:
    """A durable background job. ``payload`` (the request) and ``output`` (e.g. a model's
    extraction, persisted before any memory write) are dropped when the job ends; ``result``
    and ``error`` stay, with the ``fingerprint`` that makes retries idempotent."""

    id: str
    kind: str
    state: str
    fingerprint: str
    created_at: float
    updated_at: float
    payload: dict[str, Any] | None = None
    output: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class StoredFact:
    """A fact as stored. ``kind`` is None for a user fact, else the scaffolding's kind."""

    key: int
    content: str
    metadata: dict[str, Any]
    kind: str | None = None
    confidence: float = 0.5
    successes: int = 0
    failures: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    expires_at: float | None = None


@dataclass(frozen=True)
class Edge:
    key: int
    src: int
    dst: int
    relation: str


@dataclass(frozen=True)
class Counts:
    """Corpus size: live user facts, and every edge."""

    facts: int
    edges: int


@dataclass(frozen=True)
class Problem:
    """One broken invariant found by ``verify``; ``derived`` problems ``repair`` can fix."""

    check: str
    detail: str
    derived: bool


@dataclass(frozen=True)
class JournalState:
    """The migration journal: its epoch (None: not capturing), pending entries and bytes, and
    the distinct facts they name."""

    epoch: str | None
    entries: int
    bytes: int
    dirty_facts: int


JOURNAL_ENTRY_BYTES = 24  # what one journal entry counts against journal_max_bytes


@dataclass
class WarmProgress:
    """How far warming has got (for ``/health`` and the "still warming" error)."""

    phase: str = "starting"
    done: int = 0
    total: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenRecord:
    """A bearer token as stored: its name (the author of its writes), the SHA-256 hex digest
    of the token (the token itself is never stored), and when it was created and revoked."""

    name: str
    digest: str = field(repr=False)
    created_at: float
    revoked_at: float | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


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

    def close(self) -> None: ...


class Store(TokenStore, Protocol):
    """One open store. Every method is safe to call from several threads."""

    backend: str  # "sqlite", "postgres"
    location: str  # a directory, or a database URL without its password

    # --- lifecycle (the Runtime calls these) -------------------------------------------------
    def start(self) -> None:
        """Start the background workers (writer, indexer)."""

    def warm(self, progress: WarmProgress) -> None:
        """Make the serving space's vectors searchable (load, replay or rebuild; blocking)."""

    @property
    def warm_done(self) -> bool: ...

    def close(self) -> None:
        """Finish pending writes, persist derived state, release every resource."""

    # --- embedding spaces --------------------------------------------------------------------
    def provenance(self) -> Identity | None:
        """The identity that filled the store, or None while it holds no vector."""

    def migrated_from(self) -> str | None:
        """The model that served the store before its last committed migration, if any."""

    def settle(self, identity: Identity, now: float) -> Space:
        """Make ``identity`` the serving space's (a new or empty store), or refuse with
        EmbedderMismatch when another embedder filled it."""

    def serving_space(self) -> Space | None: ...

    # --- writes ------------------------------------------------------------------------------
    def remember(self, w: FactWrite) -> Future[int]:
        """Upsert a user fact, its vector and its links; resolves to its key."""

    def unembedded(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        """(key, content) of up to ``limit`` live user facts with no vector in the serving
        space and a key above ``after``, by key: those written before the embedder was ready
        (none while no space serves)."""

    def fill_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        """Give the serving space's vectors to the facts among ``items`` that exist and have
        none yet; nothing when ``space`` no longer serves. Resolves to how many were written."""

    def relate(self, src: int, dst: int, relation: str, now: float) -> Future[int]:
        """Add the edge (idempotent per triple); NotFound if an end is not a live fact."""

    def unrelate(self, src: int, dst: int, relation: str) -> Future[int]:
        """Remove the edge; resolves to the number removed (0 or 1)."""

    def forget(self, key: int, now: float) -> Future[bool]:
        """Delete a live fact, its edges and orphaned entity hubs; False when absent."""

    def feedback(self, key: int, success: bool, now: float) -> Future[float]:
        """Atomically nudge a live user fact's confidence; resolves to the new value."""

    def restore(self, key: int, confidence: float, successes: int, failures: int,
                created_at: float, updated_at: float,
                expires_at: float | None) -> Future[bool]:
        """Set a stored fact's learned confidence, counts and times as an export recorded them
        (``import``); False when no fact has ``key``."""

    def restore_all(self, write: RestoreWrite) -> Future[int]:
        """Write an import in ONE transaction (resolves to the facts plus edges written); an
        edge whose end is not a live fact fails it, and nothing is written."""

    def purge_expired(self, now: float) -> Future[int]:
        """Delete every fact whose expiry has passed; resolves to how many."""

    def next_expiry(self) -> float | None:
        """The earliest expiry still stored (None: nothing expires)."""

    def put_internal(self, key: int, content: str, metadata_json: str, kind: str, now: float,
                     expires_at: float | None = None) -> Future[int]: ...

    def delete_internal(self, key: int) -> Future[bool]: ...

    def write_graph(self, graph: GraphWrite, *, job: str | None = None,
                    result: dict[str, Any] | None = None,
                    background: bool = False) -> Future[list[int]]:
        """Apply ``graph`` in one transaction (resolves to the keys of its facts); with ``job``
        that job becomes committed with ``result`` in the same transaction. ``background``
        work (autograph) yields to every other write."""

    # --- durable jobs ------------------------------------------------------------------------
    def create_job(self, job: Job, *, max_pending: int) -> Future[tuple[Job, bool]]:
        """Record ``job`` unless its id exists: resolves to (the stored job, created). Refused
        (InvalidInput) when ``max_pending`` jobs of its kind are not terminal yet."""

    def update_job(self, job_id: str, now: float, *, state: str | None = None,
                   output: str | None = None, result: dict[str, Any] | None = None,
                   error: str | None = None) -> Future[Job]:
        """Change a job; reaching a terminal state drops its payload and output."""

    def get_job(self, job_id: str) -> Job | None: ...

    def pending_jobs(self, kind: str, limit: int) -> list[Job]:
        """Non-terminal jobs of ``kind``, oldest first (running ones first: resumed)."""

    def claim_job(self, kind: str, now: float) -> Future[Job | None]:
        """Atomically move the oldest accepted job of ``kind`` to running (None: none left).
        With several daemons on one database, each job is claimed by exactly one."""

    # --- a second embedding space (online migration) -----------------------------------------
    def create_space(self, identity: Identity, witness: tuple[float, ...],
                     now: float) -> Future[Space]:
        """A new, empty space being built beside the serving one (refused while one exists)."""

    def building_space(self) -> Space | None: ...

    def load_building_index(self) -> None:
        """Make the building space searchable again after a restart (its vectors are kept)."""

    def space_destination(self, space: int) -> str:
        """Where a space's derived data lives (the migration's "generated destination")."""

    def put_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        """Write vectors into a building space for the live user facts among the keys (others
        are skipped); resolves to how many were written."""

    def delete_vectors(self, space: int, keys: Sequence[int]) -> Future[int]: ...

    def space_count(self, space: int) -> int: ...

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

    def stop_journal(self) -> Future[None]: ...

    def activate_space(self, space: int, witness: tuple[float, ...]) -> Future[None]:
        """Make the building space the serving one, with its identity as provenance, in one
        transaction (the old space is kept until ``drop_space``)."""

    def drop_space(self, space: int) -> Future[None]:
        """Delete a space that does not serve: its vectors and its derived files."""

    # --- reads -------------------------------------------------------------------------------
    def facts(self, keys: Sequence[int], now: float, *,
              user_only: bool = True) -> dict[int, StoredFact]:
        """The live facts among ``keys`` (user facts only unless ``user_only`` is False)."""

    def confidences(self, keys: Sequence[int], now: float) -> dict[int, float]:
        """Learned confidence of each live user fact among ``keys``."""

    def matching(self, predicate: Predicate) -> np.ndarray:
        """Sorted int64 keys of every fact whose metadata satisfies ``predicate`` (liveness is
        the caller's to check)."""

    def text_search(self, query: str, allowed: np.ndarray | None) -> tuple[np.ndarray,
                                                                           np.ndarray]:
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

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (dst, relation) of edges leaving ``key`` to live facts, by edge key."""

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (src, relation) of edges arriving at ``key`` from live facts."""

    def targets(self, key: int) -> list[int]:
        """The dst of every edge leaving ``key``."""

    def counts(self, now: float) -> Counts: ...

    def page(self, after: int | None, limit: int, predicate: Predicate, *,
             include_internal: bool, now: float) -> list[StoredFact]:
        """Up to ``limit`` live facts after u64 id ``after`` (exclusive), in u64 order."""

    def get_internal(self, key: int, now: float) -> StoredFact | None: ...

    def scan_internal(self, kind: str, predicate: Predicate, limit: int,
                      now: float) -> list[StoredFact]:
        """Up to ``limit`` live internal facts of ``kind``, newest write first."""

    def export(self, now: float, *, include_internal: bool) -> Iterator[StoredFact | Edge]:
        """Every live fact (u64 id order), then every edge, from one consistent snapshot."""

    # --- integrity ---------------------------------------------------------------------------
    def verify(self) -> list[Problem]: ...

    def repair(self, report: Callable[[str], None]) -> list[Problem]:
        """Rebuild what is derived; return what could not be repaired."""


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

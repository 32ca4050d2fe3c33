"""The values the store roles speak: writes, stored facts and edges, spaces, jobs, tokens.

Plain frozen dataclasses and constants, shared by the role protocols (``velesmem.store.roles``),
the backends and the services. Keys are int64 (``velesmem.ids.to_i64``), as in the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

ENTITY_HUB_KIND = "entity_hub"
HUB_NAME_KEY = "_veles_entity"  # a hub's canonical name, in its (reserved) metadata
HUB_SOURCE_KEY = "_veles_source"  # what made the hub: "entity" or an identifier kind

# Why a user fact's confidence changed (``ConfidenceEvent.cause``).
CAUSE_HELPFUL = "helpful"  # feedback, success
CAUSE_NOT_HELPFUL = "not_helpful"  # feedback, failure
CAUSE_DECAY = "decay"  # a consolidation run lowered it
CAUSE_DECAY_UNDONE = "decay_undone"  # that run was undone


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
    # edges curation derived (duplicate_of, supersedes): written in the fact's own transaction
    # when their target is still live, skipped (never an error) when it was forgotten meanwhile
    derived: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Uncurated:
    """A stored fact the curation lane has not checked yet: its place in write order (the
    cursor that passes it), and what its checks read."""

    cursor: tuple[int, int]
    key: int
    content: str
    metadata: dict[str, Any]
    vector: np.ndarray
    created_at: float


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
    (src, dst, relation) — an edge whose end no longer exists is skipped, not an error; edges
    removed (``unlink``) and user facts' confidences moved by a delta, clamped to [0, 1]
    (``confidence_deltas``: a consolidation run and its undo, each one transaction)."""

    now: float
    facts: tuple[FactWrite, ...] = ()
    hubs: tuple[HubWrite, ...] = ()
    edges: tuple[tuple[int, int, str], ...] = ()
    unlink: tuple[tuple[int, int, str], ...] = ()
    confidence_deltas: tuple[tuple[int, float], ...] = ()
    confidence_cause: str = CAUSE_DECAY  # recorded in each moved fact's confidence history


@dataclass(frozen=True)
class ConfidenceEvent:
    """One change of a user fact's confidence: when (epoch seconds), the value it moved to,
    and why (a ``CAUSE_*`` name). Written in the transaction of the change itself."""

    at: float
    confidence: float
    cause: str


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

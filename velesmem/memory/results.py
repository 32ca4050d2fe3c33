"""Typed results of the memory operations; attributes are the contract's result fields.

Each result has ``to_dict()`` giving the wire shape (ids with their ``*_str`` twins). The MCP
layer sends exactly that dict; nothing below it knows about JSON-RPC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _id_pair(name: str, value: int) -> dict[str, Any]:
    return {name: value, f"{name}_str": str(value)}


@dataclass(frozen=True)
class RememberResult:
    id: int

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        return _id_pair("id", self.id)


@dataclass(frozen=True)
class Memory:
    """One recalled fact. ``score`` is the raw vector similarity, never the blended rank key."""

    id: int
    score: float
    content: str
    metadata: dict[str, Any]
    superseded_by: int | None = None  # a newer version of this fact (memory/supersede.py)
    duplicates: tuple[int, ...] = ()  # the other members of its duplicate group

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        out = {**_id_pair("id", self.id), "score": self.score, "content": self.content,
               "metadata": self.metadata}
        if self.superseded_by is not None:
            out.update(_id_pair("superseded_by", self.superseded_by))
        if self.duplicates:
            out["duplicates"] = [_id_pair("id", d) for d in self.duplicates]
        return out


@dataclass(frozen=True)
class RecallResult:
    memories: list[Memory]
    warnings: list[str] = field(default_factory=list)  # e.g. vector search still loading

    def to_dict(self) -> dict[str, Any]:
        return _warned({"memories": [m.to_dict() for m in self.memories]}, self.warnings)


def _warned(out: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """``out`` with a ``warnings`` field when there is any (absent otherwise)."""
    if warnings:
        out["warnings"] = list(warnings)
    return out


@dataclass(frozen=True)
class FusedResult:
    memories: list[Memory]
    dated_context: str | None = None
    now: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Not on the wire (the dashboard's score breakdown): u64 id → its hybrid relevance
    # normalised by the best one, and what the graph walk added to it.
    hybrid: dict[int, float] = field(default_factory=dict)
    graph: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"memories": [m.to_dict() for m in self.memories]}
        if self.dated_context is not None:
            out["dated_context"] = self.dated_context
            out["now"] = self.now
        return _warned(out, self.warnings)


@dataclass(frozen=True)
class RelateResult:
    edge_id: int

    @property
    def edge_id_str(self) -> str:
        return str(self.edge_id)

    def to_dict(self) -> dict[str, Any]:
        return _id_pair("edge_id", self.edge_id)


@dataclass(frozen=True)
class UnrelateResult:
    found: bool
    removed: int

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "removed": self.removed}


@dataclass(frozen=True)
class ForgetResult:
    id: int
    found: bool

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        return {**_id_pair("id", self.id), "found": self.found}


@dataclass(frozen=True)
class WhyNode:
    id: int
    content: str
    hop: int
    duplicates: tuple[int, ...] = ()  # the other members of its duplicate group

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        out = {**_id_pair("id", self.id), "content": self.content, "hop": self.hop}
        if self.duplicates:
            out["duplicates"] = [_id_pair("id", d) for d in self.duplicates]
        return out


@dataclass(frozen=True)
class WhyEdge:
    """An edge of a why walk. ``from`` is a Python keyword: read it as ``from_`` or getattr."""

    from_: int
    to: int
    relation: str

    @property
    def from_str(self) -> str:
        return str(self.from_)

    @property
    def to_str(self) -> str:
        return str(self.to)

    def to_dict(self) -> dict[str, Any]:
        return {**_id_pair("from", self.from_), **_id_pair("to", self.to),
                "relation": self.relation}


setattr(WhyEdge, "from", property(lambda self: self.from_))


@dataclass(frozen=True)
class WhyResult:
    nodes: list[WhyNode]
    edges: list[WhyEdge]
    truncated: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _warned({"nodes": [n.to_dict() for n in self.nodes],
                        "edges": [e.to_dict() for e in self.edges],
                        "truncated": self.truncated}, self.warnings)


@dataclass(frozen=True)
class FeedbackResult:
    id: int
    confidence: float

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        return {**_id_pair("id", self.id), "confidence": self.confidence}


@dataclass(frozen=True)
class ListedMemory:
    id: int
    content: str
    metadata: dict[str, Any]

    @property
    def id_str(self) -> str:
        return str(self.id)

    def to_dict(self) -> dict[str, Any]:
        return {**_id_pair("id", self.id), "content": self.content, "metadata": self.metadata}


@dataclass(frozen=True)
class ListResult:
    memories: list[ListedMemory]
    next_cursor: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"memories": [m.to_dict() for m in self.memories], "next_cursor": self.next_cursor}


@dataclass(frozen=True)
class StatusResult:
    """memory_status: what runs, what filled the store, extraction state, corpus size."""

    embedder: dict[str, Any]
    provenance: dict[str, Any]
    extraction: dict[str, Any]
    memory: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"embedder": self.embedder, "provenance": self.provenance,
                "extraction": self.extraction, "memory": self.memory}


@dataclass(frozen=True)
class InternalFact:
    """A piece of internal scaffolding (entity hub, compiler source, event, working context)."""

    id: int
    content: str
    metadata: dict[str, Any]
    kind: str
    updated_at: float
    expires_at: float | None = None  # epoch seconds; None: permanent

    @property
    def id_str(self) -> str:
        return str(self.id)

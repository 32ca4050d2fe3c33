"""What a consolidation run would change, computed from a snapshot of facts and edges (pure).

A fact is archived when it has an edge ``consolidated_into`` to the fact that stands for it:
every member of a ``duplicate_of`` group into the group's canonical fact (the newest, then the
longest), and the old end of a ``supersedes`` edge older than the archive age into its successor.
Nothing is deleted: archiving is one edge, and undoing a run removes exactly the edges it added.
A fact nobody confirmed or refuted (no feedback, confidence still the default) and not written
for longer than the decay age loses ``DECAY_STEP`` of confidence, once; undo gives it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from velesmem import limits
from velesmem.store.types import Edge, StoredFact

ARCHIVED_RELATION = "consolidated_into"
DUPLICATE_RELATION = "duplicate_of"
SUPERSEDES_RELATION = "supersedes"


@dataclass(frozen=True)
class Change:
    """Archive ``src`` into ``dst`` (both store keys) for ``reason`` ("duplicate", "superseded")."""

    src: int
    dst: int
    reason: str


@dataclass(frozen=True)
class Decay:
    """Lower fact ``key``'s confidence by ``-delta`` (a negative delta; undo adds it back)."""

    key: int
    delta: float


@dataclass(frozen=True)
class Plan:
    """The changes of one run, in a deterministic order."""

    changes: tuple[Change, ...]
    decays: tuple[Decay, ...] = ()


def _canonical(members: Iterable[StoredFact]) -> StoredFact:
    """The newest member, then the most complete (longest), then the lowest key."""
    return max(members, key=lambda f: (f.created_at, len(f.content), -f.key))


def plan(facts: dict[int, StoredFact], edges: Iterable[Edge], now: float,
         archive_after_seconds: float, decay_after_seconds: float | None = None) -> Plan:
    """The changes a run makes over live user ``facts`` and their ``edges`` at ``now``
    (no decay when ``decay_after_seconds`` is None)."""
    edges = list(edges)
    archived = {e.src for e in edges if e.relation == ARCHIVED_RELATION}
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for e in edges:
        if e.relation == DUPLICATE_RELATION and e.src in facts and e.dst in facts:
            parent.setdefault(e.src, e.src)
            parent.setdefault(e.dst, e.dst)
            a, b = find(e.src), find(e.dst)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[StoredFact]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(facts[key])
    changes: dict[int, Change] = {}
    for members in groups.values():
        live = [f for f in members if f.key not in archived]
        if len(live) < 2:
            continue
        canonical = _canonical(live)
        for f in sorted(live, key=lambda f: f.key):
            if f.key != canonical.key:
                changes[f.key] = Change(f.key, canonical.key, "duplicate")
    cutoff = now - archive_after_seconds
    for e in edges:
        if e.relation != SUPERSEDES_RELATION or e.src not in facts or e.dst not in facts:
            continue
        old = facts[e.dst]
        if old.key in archived or old.key in changes or e.src == old.key:
            continue
        if old.updated_at <= cutoff:
            changes[old.key] = Change(old.key, e.src, "superseded")
    decays: list[Decay] = []
    if decay_after_seconds is not None:
        stale = now - decay_after_seconds
        for f in sorted(facts.values(), key=lambda f: f.key):
            if (f.key not in archived and f.key not in changes and f.successes == 0
                    and f.failures == 0 and f.confidence == limits.DEFAULT_CONFIDENCE
                    and max(f.created_at, f.updated_at) <= stale):
                decays.append(Decay(f.key, -limits.DECAY_STEP))
    return Plan(tuple(sorted(changes.values(), key=lambda c: (c.reason, c.src))), tuple(decays))

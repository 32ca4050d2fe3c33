"""One fact as the dashboard's fact page shows it: text, metadata, author, learned confidence
and its recent history, links in and out, its duplicate group and its supersede chain, read in bounded steps."""

from __future__ import annotations

from dataclasses import dataclass

from velesmem import limits, validate
from velesmem.ids import to_u64
from velesmem.memory import duplicates as mdup
from velesmem.memory.supersede import SUPERSEDES, VersionStore, head, older
from velesmem.store.types import ConfidenceEvent

ARCHIVED_RELATION = "consolidated_into"  # velesmem.consolidate's archive edge


@dataclass(frozen=True)
class Link:
    """An edge seen from one fact: the other end's u64 id, the relation, the other end's text
    (empty when it is scaffolding: an entity hub, a source)."""

    other: int
    relation: str
    content: str
    user: bool  # the other end is a user fact (it has a page), not scaffolding


@dataclass(frozen=True)
class FactDetail:
    """Everything the fact page shows about one live user fact (ids are u64)."""

    id: int
    content: str
    metadata: dict[str, object]
    author: str | None
    confidence: float
    successes: int
    failures: int
    history: tuple[ConfidenceEvent, ...]  # recent confidence changes, newest first
    created_at: float
    updated_at: float
    expires_at: float | None
    links_out: tuple[Link, ...]
    links_in: tuple[Link, ...]
    duplicates: tuple[int, ...]  # the other members of its duplicate group
    newer: tuple[int, ...]  # versions superseding it, newest first
    older: tuple[int, ...]  # versions it supersedes, newest first
    archived: bool
    texts: dict[int, str]  # the text of each version and duplicate named above

    @property
    def superseded_by(self) -> int | None:
        return self.newer[-1] if self.newer else None


def _links(store: VersionStore, rows: list[tuple[int, str]], now: float) -> tuple[Link, ...]:
    found = store.facts([k for k, _ in rows], now, user_only=False)
    return tuple(Link(to_u64(k), rel, found[k].content if k in found else "",
                      k in found and found[k].kind is None) for k, rel in rows)


def fact_detail(store: VersionStore, key: int, now: float) -> FactDetail | None:
    """The detail of user fact ``key`` (int64), or None when no live user fact has it."""
    fact = store.facts([key], now).get(key)
    if fact is None:
        return None
    cap = limits.MAX_FACT_PAGE_EDGES
    out_rows = store.out_edges(key, now, cap)
    in_rows = store.in_edges(key, now, cap)
    chain = head(store, key, now)  # [newest, …, key]
    group_keys = [k for k in mdup.group(store, key, now) if k != key]
    older_keys = older(store, key, now)
    named = store.facts(chain[:-1] + older_keys + group_keys, now)
    return FactDetail(
        id=to_u64(key), content=fact.content,
        metadata=validate.visible_metadata(fact.metadata),
        author=_author(fact.metadata.get(validate.AUTHOR_KEY)),
        confidence=fact.confidence, successes=fact.successes, failures=fact.failures,
        history=tuple(store.confidence_history(key, limits.MAX_CONFIDENCE_EVENTS)),
        created_at=fact.created_at, updated_at=fact.updated_at, expires_at=fact.expires_at,
        links_out=_links(store, out_rows, now), links_in=_links(store, in_rows, now),
        duplicates=tuple(sorted(to_u64(k) for k in group_keys)),
        newer=tuple(to_u64(k) for k in chain[:-1]),
        older=tuple(to_u64(k) for k in older_keys),
        archived=any(rel == ARCHIVED_RELATION for _, rel in out_rows),
        texts={to_u64(k): f.content for k, f in named.items()},
    )


def _author(value: object) -> str | None:
    return value if isinstance(value, str) else None


def superseded_keys(store: VersionStore, keys: list[int], now: float) -> set[int]:
    """Which of ``keys`` a live newer version supersedes (one bounded edge read each)."""
    return {k for k in keys
            if any(rel == SUPERSEDES for _, rel in store.in_edges(k, now, limits.MAX_SUPERSEDE_CHAIN))}


def archived_keys(store: VersionStore, keys: list[int], now: float) -> set[int]:
    """Which of ``keys`` a consolidation run archived (one bounded edge read each)."""
    return {k for k in keys
            if any(rel == ARCHIVED_RELATION
                   for _, rel in store.out_edges(k, now, limits.MAX_ARCHIVE_EDGE_SCAN))}

"""``entity``: what the entity graph knows about one named entity.

A hub is the internal fact ``entity_hub_id(name)``; its metadata holds the attributes merged
onto it (reserved ``_veles_*`` keys hidden). ``relations`` are the typed edges from it to other
hubs, ``relations_in`` those from other hubs to it; the bipartite ``about``/``mentions``
scaffolding between hubs and facts is left out of both. Each direction resolves at most
MAX_ENTITY_RELATIONS edges within a window of MAX_ENTITY_SCAN_EDGES raw edges, and says when it
was cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from velesmem import limits
from velesmem.ids import entity_hub_id, to_i64, to_u64
from velesmem.store import ENTITY_HUB_KIND, HUB_NAME_KEY, FactStore, SourceStore, StoredFact
from velesmem.validate import visible_metadata


class EntityStore(FactStore, SourceStore, Protocol):
    """The store roles an entity lookup reads: hubs (internal facts) and their edges."""


SCAFFOLDING = frozenset({"about", "mentions"})


@dataclass(frozen=True)
class EntityResult:
    found: bool
    id: int
    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    relations: list[dict[str, Any]] = field(default_factory=list)
    relations_in: list[dict[str, Any]] = field(default_factory=list)
    relations_truncated: bool = False
    relations_in_truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "id": self.id, "id_str": str(self.id), "name": self.name,
                "attributes": self.attributes, "relations": self.relations,
                "relations_in": self.relations_in,
                "relations_truncated": self.relations_truncated,
                "relations_in_truncated": self.relations_in_truncated}


def hub_name(fact: StoredFact) -> str:
    return str(fact.metadata.get(HUB_NAME_KEY, fact.content.removeprefix("Entity: ")))


def _side(store: EntityStore, edges: list[tuple[int, str]], now: float,
          end: str) -> tuple[list[dict[str, Any]], bool]:
    """Resolve scanned edges (other end, predicate) to hub relations; cut at the caps."""
    scanned_all = len(edges) <= limits.MAX_ENTITY_SCAN_EDGES
    edges = [(k, r) for k, r in edges[: limits.MAX_ENTITY_SCAN_EDGES] if r not in SCAFFOLDING]
    hubs = {k: f for k, f in store.facts([k for k, _ in edges], now, user_only=False).items()
            if f.kind == ENTITY_HUB_KIND}
    out: list[dict[str, Any]] = []
    for key, predicate in edges:
        hub = hubs.get(key)
        if hub is None:
            continue
        if len(out) == limits.MAX_ENTITY_RELATIONS:
            return out, True
        uid = to_u64(key)
        out.append({"predicate": predicate, end: hub_name(hub), f"{end}_id": uid,
                    f"{end}_id_str": str(uid)})
    return out, not scanned_all


def lookup_entity(store: EntityStore, name: str, now: float) -> EntityResult:
    """The entity ``name`` (already canonical: trimmed, lowercased)."""
    uid = entity_hub_id(name)
    key = to_i64(uid)
    hub = store.get_internal(key, now)
    if hub is None or hub.kind != ENTITY_HUB_KIND:
        return EntityResult(False, uid, name)
    window = limits.MAX_ENTITY_SCAN_EDGES + 1
    relations, cut = _side(store, store.out_edges(key, now, window), now, "target")
    relations_in, cut_in = _side(store, store.in_edges(key, now, window), now, "source")
    return EntityResult(True, uid, name, visible_metadata(hub.metadata), relations, relations_in,
                        cut, cut_in)

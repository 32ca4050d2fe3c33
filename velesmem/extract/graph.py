"""From an extraction (or a fact's identifiers) to one atomic graph write.

Each topic or named entity gets a hub (the internal fact ``entity_hub_id(name)``) and, for each
fact about it, two edges: fact →``about``→ hub and hub →``mentions``→ fact. A relation becomes
a hub → hub edge labelled with its predicate; an attribute merges into its hub's metadata.
Every id is content-derived, so replaying the same extraction writes the same facts and edges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from velesmem.extract.identifiers import Identifier
from velesmem.extract.model import Extraction
from velesmem.ids import entity_hub_id, fact_id, to_i64
from velesmem.store import FactWrite, GraphWrite, HubWrite

ABOUT = "about"
MENTIONS = "mentions"


def hub_key(name: str) -> int:
    return to_i64(entity_hub_id(name))


def _about(fact: int, hub: int) -> list[tuple[int, int, str]]:
    return [(fact, hub, ABOUT), (hub, fact, MENTIONS)]


def _entity_hubs(extraction: Extraction) -> tuple[HubWrite, ...]:
    """A hub for every entity the extraction names, with the attributes given for it."""
    attributes: dict[str, list[tuple[str, object]]] = {}
    for a in extraction.attributes:
        attributes.setdefault(a.entity, []).append((a.key, a.value))
    return tuple(HubWrite(hub_key(name), name, "entity", tuple(attributes.get(name, ())))
                 for name in extraction.entities)


def extraction_graph(extraction: Extraction, *, metadata_json: str, now: float,
                     expires_at: float | None,
                     embed: Callable[[Sequence[str]], np.ndarray]) -> GraphWrite:
    """The facts (embedded in one batch), hubs and edges of ``extraction``."""
    texts = [f.text for f in extraction.facts]
    vectors = embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
    facts = tuple(FactWrite(to_i64(fact_id(t)), t, metadata_json, v, now, expires_at)
                  for t, v in zip(texts, vectors))
    hubs = _entity_hubs(extraction)
    edges: list[tuple[int, int, str]] = []
    for f, w in zip(extraction.facts, facts):
        for topic in f.topics:
            edges += _about(w.key, hub_key(topic))
    for r in extraction.relations:
        edges.append((hub_key(r.subject), hub_key(r.object), r.predicate))
    return GraphWrite(now, facts, hubs, tuple(edges))


def identifier_graph(fact: int, identifiers: Sequence[Identifier], now: float) -> GraphWrite:
    """Hubs for a stored fact's identifiers, linked to it."""
    hubs = tuple(HubWrite(hub_key(i.canonical), i.canonical, i.kind) for i in identifiers)
    edges = tuple(e for h in hubs for e in _about(fact, h.key))
    return GraphWrite(now, (), hubs, edges)


def topics_graph(fact: int, extraction: Extraction, now: float) -> GraphWrite:
    """A remote extractor's reading of one stored fact (autograph): the fact is linked to the
    topics of every extracted statement; relations and attributes join the hubs."""
    hubs = _entity_hubs(extraction)
    edges: list[tuple[int, int, str]] = []
    topics = dict.fromkeys(t for f in extraction.facts for t in f.topics)
    for topic in topics:
        edges += _about(fact, hub_key(topic))
    for r in extraction.relations:
        edges.append((hub_key(r.subject), hub_key(r.object), r.predicate))
    return GraphWrite(now, (), hubs, tuple(edges))

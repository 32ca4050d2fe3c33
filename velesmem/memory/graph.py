"""The bounded breadth-first walk over OUTGOING edges behind ``why`` and ``recall_fused``.

Entity hubs are passed through, not reported: a fact's ``about`` edge to a hub and the hub's
``mentions`` edges to other facts make one hop, reported as an edge ``A → B`` labelled
``via <entity>`` — so an answer names the identifier or entity that connected it. A typed
relation from that hub to another hub (``alice leads payments``, from an extractor or an
imported knowledge graph) is passed through the same way: ``A → C`` for each fact ``C`` the
other hub mentions, labelled ``via <entity> <relation> <other entity>``, still one hop.
Budgets: at most 64 edges followed out of any node (or hub), relations looked for among a hub's
first 4096 edges, 500 nodes, 2000 edges per walk. An edge to an already-visited node is still
reported. ``truncated`` is set when a budget cut the walk, or when the hop limit stopped it while
the last frontier still had outgoing edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from velesmem import limits
from velesmem.store import ENTITY_HUB_KIND, HUB_NAME_KEY, FactStore

VIA = "via "
MENTIONS = "mentions"
SCAFFOLDING = frozenset({"about", MENTIONS})


@dataclass
class Walk:
    """Reached facts (int64 key → hop, in discovery order), edges (from, to, relation), and
    the hubs the walk went through (hub key → the facts reached through it)."""

    nodes: dict[int, int] = field(default_factory=dict)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    hubs: dict[int, set[int]] = field(default_factory=dict)
    truncated: bool = False
    hub_edges: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # read once a walk


def _hub_names(store: FactStore, keys: list[int], now: float) -> dict[int, str]:
    """The hubs among ``keys``, with their names."""
    found = store.facts(keys, now, user_only=False)
    return {k: str(f.metadata.get(HUB_NAME_KEY, f.content.removeprefix("Entity: ")))
            for k, f in found.items() if f.kind == ENTITY_HUB_KIND}


def _neighbours(store: FactStore, node: int, now: float,
                out: Walk) -> list[tuple[int, str, int | None]]:
    """(fact, relation, hub or None) one hop from ``node``, hubs passed through."""
    degree = limits.MAX_WHY_NODE_DEGREE
    rows = store.out_edges(node, now, degree + 1)
    if len(rows) > degree:
        out.truncated = True
        rows = rows[:degree]
    hubs = _hub_names(store, [d for d, _ in rows], now) if rows else {}
    result: list[tuple[int, str, int | None]] = []
    for dst, relation in rows:
        if dst not in hubs:
            result.append((dst, relation, None))
            continue
        label = VIA + hubs[dst]
        result.extend((fact, label, dst) for fact in _mentioned(store, dst, node, now, out))
        related = [(h, r) for h, r in _hub_edges(store, dst, now, out) if r not in SCAFFOLDING]
        if len(related) > degree:
            out.truncated = True
            related = related[:degree]
        others = _hub_names(store, [h for h, _ in related], now) if related else {}
        for other, predicate in related:
            if other in others:
                label = f"{VIA}{hubs[dst]} {predicate} {others[other]}"
                result.extend((fact, label, other)
                              for fact in _mentioned(store, other, node, now, out))
    return result


def _hub_edges(store: FactStore, hub: int, now: float, out: Walk) -> list[tuple[int, str]]:
    """The first MAX_ENTITY_SCAN_EDGES edges out of ``hub`` (read once per walk)."""
    edges = out.hub_edges.get(hub)
    if edges is None:
        edges = store.out_edges(hub, now, limits.MAX_ENTITY_SCAN_EDGES + 1)
        if len(edges) > limits.MAX_ENTITY_SCAN_EDGES:
            out.truncated = True
            edges = edges[:limits.MAX_ENTITY_SCAN_EDGES]
        out.hub_edges[hub] = edges
    return edges


def _mentioned(store: FactStore, hub: int, node: int, now: float, out: Walk) -> list[int]:
    """The facts ``hub`` mentions other than ``node``, at most MAX_WHY_NODE_DEGREE."""
    mentioned = [d for d, r in _hub_edges(store, hub, now, out) if r == MENTIONS and d != node]
    if len(mentioned) > limits.MAX_WHY_NODE_DEGREE:
        out.truncated = True
        mentioned = mentioned[:limits.MAX_WHY_NODE_DEGREE]
    return mentioned


def walk(store: FactStore, seed: int, hops: int, now: float) -> Walk:
    """BFS from ``seed`` (int64 key) for ``hops`` hops under the why budgets."""
    out = Walk(nodes={seed: 0})
    frontier = [seed]
    for hop in range(1, hops + 1):
        nxt: list[int] = []
        for node in frontier:
            for dst, relation, hub in _neighbours(store, node, now, out):
                if len(out.edges) >= limits.MAX_WHY_EDGES:
                    out.truncated = True
                    return out
                if dst not in out.nodes:
                    if len(out.nodes) >= limits.MAX_WHY_NODES:
                        out.truncated = True
                        continue
                    out.nodes[dst] = hop
                    nxt.append(dst)
                if hub is not None:
                    out.hubs.setdefault(hub, set()).add(dst)
                out.edges.append((node, dst, relation))
        frontier = nxt
        if not frontier:
            return out
    if any(store.out_edges(node, now, 1) for node in frontier):
        out.truncated = True
    return out

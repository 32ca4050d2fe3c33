"""The bounded breadth-first walk over OUTGOING edges behind ``why`` and ``recall_fused``.

Budgets: at most 64 edges followed out of any node, 500 nodes, 2000 edges per walk. An edge to
an already-visited node is still reported. ``truncated`` is set when a budget cut the walk, or
when the hop limit stopped it while the last frontier still had outgoing edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from velesmem import limits
from velesmem.store import Store


@dataclass
class Walk:
    """Reached nodes (int64 key → hop, in discovery order) and edges (from, to, relation)."""

    nodes: dict[int, int] = field(default_factory=dict)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    truncated: bool = False


def walk(store: Store, seed: int, hops: int, now: float) -> Walk:
    """BFS from ``seed`` (int64 key) for ``hops`` hops under the why budgets."""
    out = Walk(nodes={seed: 0})
    frontier = [seed]
    degree = limits.MAX_WHY_NODE_DEGREE
    for hop in range(1, hops + 1):
        nxt: list[int] = []
        for node in frontier:
            rows = store.out_edges(node, now, degree + 1)
            if len(rows) > degree:
                out.truncated = True
                rows = rows[:degree]
            for dst, relation in rows:
                if len(out.edges) >= limits.MAX_WHY_EDGES:
                    out.truncated = True
                    return out
                if dst not in out.nodes:
                    if len(out.nodes) >= limits.MAX_WHY_NODES:
                        out.truncated = True
                        continue
                    out.nodes[dst] = hop
                    nxt.append(dst)
                out.edges.append((node, dst, relation))
        frontier = nxt
        if not frontier:
            return out
    if any(store.out_edges(node, now, 1) for node in frontier):
        out.truncated = True
    return out

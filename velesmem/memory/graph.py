"""The bounded breadth-first walk over OUTGOING edges behind ``why`` and ``recall_fused``.

Budgets: at most 64 edges followed out of any node, 500 nodes, 2000 edges per walk. An edge to
an already-visited node is still reported. ``truncated`` is set when a budget cut the walk, or
when the hop limit stopped it while the last frontier still had outgoing edges.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from velesmem import limits

LIVE = "(f.expires_at IS NULL OR f.expires_at > ?)"


@dataclass
class Walk:
    """Reached nodes (int64 id → hop, in discovery order) and edges (from, to, relation)."""

    nodes: dict[int, int] = field(default_factory=dict)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    truncated: bool = False


def walk(conn: sqlite3.Connection, seed: int, hops: int, now: float) -> Walk:
    """BFS from ``seed`` (int64 id) for ``hops`` hops under the why budgets."""
    out = Walk(nodes={seed: 0})
    frontier = [seed]
    degree = limits.MAX_WHY_NODE_DEGREE
    for hop in range(1, hops + 1):
        nxt: list[int] = []
        for node in frontier:
            rows = conn.execute(
                f"SELECT e.dst, e.relation FROM edges e JOIN facts f ON f.id = e.dst "
                f"WHERE e.src = ? AND {LIVE} ORDER BY e.id LIMIT ?",
                (node, now, degree + 1)).fetchall()
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
    if frontier and _has_outgoing(conn, frontier, now):
        out.truncated = True
    return out


def _has_outgoing(conn: sqlite3.Connection, nodes: list[int], now: float) -> bool:
    for node in nodes:
        row = conn.execute(f"SELECT 1 FROM edges e JOIN facts f ON f.id = e.dst WHERE e.src = ? "
                           f"AND {LIVE} LIMIT 1", (node, now)).fetchone()
        if row is not None:
            return True
    return False

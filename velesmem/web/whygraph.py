"""A ``why`` walk drawn as SVG on the server: a deterministic layered layout by hop, readable at
50 nodes, every node a focusable link to its fact page.

Hops are columns, left to right (a hop with more than ``ROWS`` facts wraps into several columns);
within a column the facts are ordered by the mean row of the facts that reached them (fewer
crossings), then by discovery order, and each fact is centred on the facts it reached (a tree). Each edge is labelled with its relation(s) — ``via <entity>``
names the identifier or entity that linked two facts. Every text is escaped: facts are untrusted.
The page's ``why.js`` moves focus between hops with the arrow keys; without JavaScript the nodes
are ordinary links, in hop order for Tab.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from velesmem.memory.results import WhyEdge, WhyNode

ROWS = 40  # facts per column before a hop wraps into another column
NODE_W, NODE_H = 210, 50
COL_GAP, ROW_GAP = 130, 22  # room for edge labels between columns
PAD, HEADER = 16, 26
LINE_CHARS, LINES = 32, 2  # a node shows its text's start on at most two lines
LABEL_CHARS = 26  # an edge label's characters (the full label is its tooltip)
TITLE_CHARS = 400  # a node's tooltip: the start of its text
LABEL_CHAR_W = 6.4  # px per label character at the stylesheet's label size (for its backdrop)
BACK_BEND = 70  # how far an edge to its own column bows out to the right
BACK_DROP = 34  # how far below the straight line an edge back to an earlier column bows


@dataclass(frozen=True)
class Placed:
    """A node where it is drawn: column, row within the column, top-left corner."""

    node: WhyNode
    index: int  # its position within its hop
    column: int
    row: int
    x: float
    y: float


@dataclass(frozen=True)
class Link:
    """One drawn edge: its two ends (u64 ids) and every relation between them, in order."""

    src: int
    dst: int
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """The placed nodes (in hop order), the edges and the drawing's size."""

    nodes: tuple[Placed, ...]
    links: tuple[Link, ...]
    width: float
    height: float
    hop_columns: tuple[tuple[int, int], ...]  # (hop, its first column), for the headers


def _order(nodes: Sequence[WhyNode], edges: Sequence[WhyEdge]) -> dict[int, list[WhyNode]]:
    """The nodes of each hop, each hop ordered by the mean position of its predecessors."""
    by_hop: dict[int, list[WhyNode]] = {}
    for n in nodes:
        by_hop.setdefault(n.hop, []).append(n)
    position: dict[int, int] = {}
    discovered = {n.id: i for i, n in enumerate(nodes)}
    hop_of = {n.id: n.hop for n in nodes}
    preds: dict[int, list[int]] = {}
    for e in edges:
        if e.from_ in hop_of and e.to in hop_of and hop_of[e.from_] < hop_of[e.to]:
            preds.setdefault(e.to, []).append(e.from_)
    for hop in sorted(by_hop):
        members = by_hop[hop]
        if hop > min(by_hop):
            def key(n: WhyNode) -> tuple[float, int]:
                seen = [position[p] for p in preds.get(n.id, []) if p in position]
                mean = sum(seen) / len(seen) if seen else math.inf
                return (mean, discovered[n.id])
            members.sort(key=key)
        for i, n in enumerate(members):
            position[n.id] = i
    return by_hop


def _rows_y(columns: dict[int, list[WhyNode]], kids: dict[int, list[int]]) -> dict[int, float]:
    """Each node's top y: packed in its column's order, then, from the last column back, each
    fact centred on the facts it reached (kept in order, never closer than a row apart), so a
    walk reads like a tree."""
    step = float(NODE_H + ROW_GAP)
    top = float(PAD + HEADER)
    ys: dict[int, float] = {n.id: top + row * step for members in columns.values() for row, n in enumerate(members)}
    for col in sorted(columns, reverse=True):
        prev: float | None = None
        for n in columns[col]:
            below = [ys[k] for k in kids.get(n.id, ())]
            want = sum(below) / len(below) if below else (top if prev is None else prev + step)
            y = want if prev is None else max(want, prev + step)
            ys[n.id] = max(y, top)
            prev = ys[n.id]
    return ys


def layout(nodes: Sequence[WhyNode], edges: Sequence[WhyEdge]) -> Layout:
    """Place ``nodes`` by hop and gather ``edges`` between the same two facts (see module doc)."""
    by_hop = _order(nodes, edges)
    hop_columns: list[tuple[int, int]] = []
    columns: dict[int, list[WhyNode]] = {}
    where: dict[int, tuple[int, int, int]] = {}  # id -> (index in its hop, column, row)
    column = 0
    for hop in sorted(by_hop):
        members = by_hop[hop]
        hop_columns.append((hop, column))
        for i, n in enumerate(members):
            col, row = column + i // ROWS, i % ROWS
            columns.setdefault(col, []).append(n)
            where[n.id] = (i, col, row)
        column += max(1, math.ceil(len(members) / ROWS))
    hop_of = {n.id: n.hop for n in nodes}
    kids: dict[int, list[int]] = {}
    for e in edges:
        if e.from_ in where and e.to in where and hop_of[e.to] > hop_of[e.from_] \
                and e.to not in kids.setdefault(e.from_, []):
            kids[e.from_].append(e.to)
    ys = _rows_y(columns, kids)
    placed = tuple(Placed(n, where[n.id][0], where[n.id][1], where[n.id][2],
                          PAD + where[n.id][1] * (NODE_W + COL_GAP), ys[n.id])
                   for hop in sorted(by_hop) for n in by_hop[hop])
    labels: dict[tuple[int, int], list[str]] = {}
    for e in edges:
        if e.from_ in where and e.to in where:
            found = labels.setdefault((e.from_, e.to), [])
            if e.relation not in found:
                found.append(e.relation)
    links = tuple(Link(s, d, tuple(rels)) for (s, d), rels in labels.items())
    width = 2 * PAD + max(column, 1) * (NODE_W + COL_GAP) - COL_GAP + BACK_BEND
    bottom = max((p.y for p in placed), default=PAD + HEADER)
    height = bottom + NODE_H + PAD + BACK_DROP
    return Layout(placed, links, float(width), float(height), tuple(hop_columns))


def node_lines(text: str) -> list[str]:
    """The start of a fact's text on at most ``LINES`` lines of ``LINE_CHARS``."""
    flat = " ".join(text.split()) or "(empty)"
    lines = textwrap.wrap(flat, LINE_CHARS, max_lines=LINES, placeholder=" …",
                          break_long_words=True) or [flat[:LINE_CHARS]]
    return lines


def _short(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "…"


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _edge(src: Placed, dst: Placed, link: Link) -> str:
    """One edge: a curve from ``src``'s right side to ``dst``'s left side; back to an earlier
    column from ``src``'s left side to ``dst``'s right side, bowed below; to its own column bowed
    out to the right. Its label sits on the curve's middle."""
    y1, y2 = src.y + NODE_H / 2, dst.y + NODE_H / 2
    if dst.column > src.column:  # forward: right side to left side
        x1, x2 = src.x + NODE_W, dst.x
        c1, c2 = (x1 + (x2 - x1) / 2, y1), (x1 + (x2 - x1) / 2, y2)
    elif dst.column < src.column:  # back to an earlier column: left side to right side, bowed
        x1, x2 = src.x, dst.x + NODE_W  # below the straight line, clear of a forward edge
        c1, c2 = (x1 - BACK_BEND / 2, y1 + BACK_DROP), (x2 + BACK_BEND / 2, y2 + BACK_DROP)
    else:  # to itself or its own column: out to the right and back
        x1 = x2 = src.x + NODE_W
        y2 += 6 if dst.node.id == src.node.id else 0
        c1, c2 = (x1 + BACK_BEND, y1), (x2 + BACK_BEND, y2)
    path = (f"M{_num(x1)},{_num(y1)} C{_num(c1[0])},{_num(c1[1])} {_num(c2[0])},{_num(c2[1])} "
            f"{_num(x2)},{_num(y2)}")
    mx = (x1 + 3 * c1[0] + 3 * c2[0] + x2) / 8  # the curve's point at t = 1/2
    my = (y1 + 3 * c1[1] + 3 * c2[1] + y2) / 8
    full = ", ".join(link.labels)
    label = _short(full, LABEL_CHARS)
    w = len(label) * LABEL_CHAR_W + 8
    return (
        f'<g class="why-edge"><title>{escape(full)}</title>'
        f'<path d="{path}" marker-end="url(#why-arrow)"/>'
        f'<rect class="why-label-bg" x="{_num(mx - w / 2)}" y="{_num(my - 9)}" '
        f'width="{_num(w)}" height="16" rx="3"/>'
        f'<text class="why-label" x="{_num(mx)}" y="{_num(my + 3)}" '
        f'text-anchor="middle">{escape(label)}</text></g>')


def _node(p: Placed, href: str, preds: Sequence[int]) -> str:
    n = p.node
    lines = node_lines(n.content)
    first_y = p.y + (NODE_H - 16 * len(lines)) / 2 + 12
    texts = "".join(
        f'<text class="why-text" x="{_num(p.x + 10)}" y="{_num(first_y + 16 * i)}">'
        f"{escape(line)}</text>" for i, line in enumerate(lines))
    seed = " why-seed" if n.hop == 0 else ""
    dups = f", {len(n.duplicates)} duplicates" if n.duplicates else ""
    aria = f"hop {n.hop}{dups}: {_short(' '.join(n.content.split()), 160)}"
    prev = ",".join(str(i) for i in preds)
    return (
        f'<a class="why-node{seed}" href="{escape(href)}" tabindex="0" '
        f'id="why-node-{n.id}" data-id="{n.id}" data-hop="{n.hop}" data-index="{p.index}" '
        f'data-prev="{prev}" aria-label="{escape(aria)}">'
        f"<title>{escape(_short(n.content, TITLE_CHARS))} (id {n.id}){escape(dups)}</title>"
        f'<rect x="{_num(p.x)}" y="{_num(p.y)}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
        f"{texts}</a>")


def render(drawing: Layout, href: Callable[[int], str], caption: str = "") -> Markup:
    """The SVG of a laid-out walk; ``href(id)`` is each node's link (its fact page)."""
    where = {p.node.id: p for p in drawing.nodes}
    preds: dict[int, list[int]] = {}
    for link in drawing.links:
        if where[link.src].node.hop < where[link.dst].node.hop:
            preds.setdefault(link.dst, []).append(link.src)
    parts = [
        f'<svg class="why-graph" xmlns="http://www.w3.org/2000/svg" role="group" '
        f'width="{_num(drawing.width)}" height="{_num(drawing.height)}" '
        f'viewBox="0 0 {_num(drawing.width)} {_num(drawing.height)}" '
        f'aria-label="{escape(caption or "the walk, by hop")}">',
        '<defs><marker id="why-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        "</defs>",
    ]
    for hop, column in drawing.hop_columns:
        x = PAD + column * (NODE_W + COL_GAP)
        name = "hop 0 (the best match)" if hop == 0 else f"hop {hop}"
        parts.append(f'<text class="why-hop" x="{_num(x)}" y="{PAD + 12}">{escape(name)}</text>')
    parts.extend(_edge(where[link.src], where[link.dst], link) for link in drawing.links)
    parts.extend(_node(p, href(p.node.id), preds.get(p.node.id, ())) for p in drawing.nodes)
    parts.append("</svg>")
    return Markup("".join(parts))

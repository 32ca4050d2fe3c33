"""The why walk drawn as SVG: columns by hop, no overlapping nodes at 50, labelled edges, every
node a focusable link, every text escaped, the same drawing for the same walk."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from velesmem.memory.results import WhyEdge, WhyNode
from velesmem.web import whygraph

SVG = "{http://www.w3.org/2000/svg}"


def href(node_id: int) -> str:
    return f"/fact/{node_id}"


def _walk(n_hop1: int, n_hop2: int) -> tuple[list[WhyNode], list[WhyEdge]]:
    nodes = [WhyNode(1, "the seed decision", 0)]
    edges: list[WhyEdge] = []
    for i in range(n_hop1):
        nodes.append(WhyNode(100 + i, f"hop one fact {i}", 1))
        edges.append(WhyEdge(1, 100 + i, "implemented_by"))
    for j in range(n_hop2):
        nodes.append(WhyNode(1000 + j, f"hop two fact {j}", 2))
        edges.append(WhyEdge(100 + j % max(n_hop1, 1), 1000 + j, "via OPS-88"))
    return nodes, edges


def _rects(drawing: whygraph.Layout) -> list[tuple[float, float, float, float]]:
    return [(p.x, p.y, p.x + whygraph.NODE_W, p.y + whygraph.NODE_H) for p in drawing.nodes]


def test_hops_are_columns_left_to_right() -> None:
    nodes, edges = _walk(2, 2)
    drawing = whygraph.layout(nodes, edges)
    x_of = {p.node.id: p.x for p in drawing.nodes}
    assert x_of[1] < x_of[100] == x_of[101] < x_of[1000] == x_of[1001]
    assert [h for h, _ in drawing.hop_columns] == [0, 1, 2]


def _apart(drawing: whygraph.Layout) -> None:
    rects = _rects(drawing)
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
        assert a[2] <= drawing.width and a[3] <= drawing.height


def test_fifty_nodes_stay_one_column_per_hop_without_overlap() -> None:
    nodes, edges = _walk(10, 39)
    drawing = whygraph.layout(nodes, edges)
    assert len(drawing.nodes) == 50
    assert {p.node.hop: p.column for p in drawing.nodes} == {0: 0, 1: 1, 2: 2}
    _apart(drawing)


def test_a_fact_is_centred_on_the_facts_it_reached() -> None:
    nodes, edges = _walk(3, 9)
    drawing = whygraph.layout(nodes, edges)
    y = {p.node.id: p.y for p in drawing.nodes}
    for parent in (100, 101, 102):
        reached = [e.to for e in edges if e.from_ == parent]
        assert y[parent] == sum(y[k] for k in reached) / len(reached)
    assert y[1] == sum(y[k] for k in (100, 101, 102)) / 3


def test_a_very_wide_hop_wraps_into_columns_without_overlap() -> None:
    nodes, edges = _walk(2, 100)
    drawing = whygraph.layout(nodes, edges)
    assert len({p.column for p in drawing.nodes if p.node.hop == 2}) == 3  # 100 / 40
    assert max(p.row for p in drawing.nodes) == whygraph.ROWS - 1
    _apart(drawing)


def test_a_hop_is_ordered_by_the_facts_that_reached_it() -> None:
    nodes = [WhyNode(1, "seed", 0), WhyNode(10, "a", 1), WhyNode(11, "b", 1),
             WhyNode(20, "from b", 2), WhyNode(21, "from a", 2)]
    edges = [WhyEdge(1, 10, "r"), WhyEdge(1, 11, "r"), WhyEdge(11, 20, "r"), WhyEdge(10, 21, "r")]
    drawing = whygraph.layout(nodes, edges)
    hop2 = sorted((p for p in drawing.nodes if p.node.hop == 2), key=lambda p: p.row)
    assert [p.node.id for p in hop2] == [21, 20]


def test_edges_between_two_facts_share_one_label_listing_each_relation() -> None:
    nodes = [WhyNode(1, "seed", 0), WhyNode(2, "pr", 1)]
    edges = [WhyEdge(1, 2, "implemented_by"), WhyEdge(1, 2, "via PR #57"),
             WhyEdge(1, 2, "implemented_by"), WhyEdge(2, 1, "fixes")]
    drawing = whygraph.layout(nodes, edges)
    assert {(lk.src, lk.dst): lk.labels for lk in drawing.links} == {
        (1, 2): ("implemented_by", "via PR #57"), (2, 1): ("fixes",)}


def test_the_svg_is_well_formed_each_node_a_focusable_link_each_edge_labelled() -> None:
    nodes, edges = _walk(2, 1)
    svg = str(whygraph.render(whygraph.layout(nodes, edges), href, "why we chose it"))
    root = ET.fromstring(svg)
    links = root.findall(f"{SVG}a")
    assert [a.get("href") for a in links] == ["/fact/1", "/fact/100", "/fact/101", "/fact/1000"]
    assert {a.get("tabindex") for a in links} == {"0"}
    assert [a.get("data-hop") for a in links] == ["0", "1", "1", "2"]
    assert links[3].get("data-prev") == "100"
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "why-label"]
    assert sorted(labels) == ["implemented_by", "implemented_by", "via OPS-88"]


def test_untrusted_text_is_escaped_everywhere() -> None:
    evil = '<script>alert(1)</script> <img src=x onerror="alert(2)"> javascript:alert(3)'
    nodes = [WhyNode(1, evil, 0), WhyNode(2, "b", 1)]
    edges = [WhyEdge(1, 2, '"><script>alert(4)</script>')]
    svg = str(whygraph.render(whygraph.layout(nodes, edges), href, evil))
    assert "<script" not in svg and "<img" not in svg and 'onerror="' not in svg
    root = ET.fromstring(svg)  # still one well-formed document
    assert root.find(f"{SVG}a/{SVG}title") is not None
    assert not re.search(r'href="javascript', svg)


def test_the_same_walk_draws_the_same_bytes() -> None:
    nodes, edges = _walk(6, 20)
    first = whygraph.render(whygraph.layout(nodes, edges), href)
    assert whygraph.render(whygraph.layout(list(nodes), list(edges)), href) == first


def test_node_text_is_cut_to_two_lines() -> None:
    lines = whygraph.node_lines("word " * 100)
    assert len(lines) == whygraph.LINES and lines[-1].endswith("…")
    assert all(len(line) <= whygraph.LINE_CHARS for line in lines)
    assert whygraph.node_lines("") == ["(empty)"]

"""relate / unrelate / forget / why / recall_fused: direction, idempotence, budgets, fusion."""

from __future__ import annotations

import itertools

import pytest

from velesmem import limits
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import edge_id, entity_hub_id
from velesmem.memory import ENTITY_HUB_KIND, MemoryService


def test_relate_is_idempotent_and_ids_the_triple(mem: MemoryService) -> None:
    a, b = mem.remember("decision A"), mem.remember("evidence B")
    first = mem.relate(a.id, b.id_str, "depends_on")
    again = mem.relate(a.id_str, b.id, "depends_on")
    assert first.edge_id == again.edge_id == edge_id(a.id, b.id, "depends_on")
    assert first.to_dict()["edge_id_str"] == str(first.edge_id)
    assert mem.memory_status().memory["edges"] == 1


def test_relate_refusals(mem: MemoryService) -> None:
    a = mem.remember("decision A")
    with pytest.raises(NotFound, match="to 5 is not a stored memory"):
        mem.relate(a.id, 5, "r")
    with pytest.raises(NotFound, match="from 5"):
        mem.relate(5, a.id, "r")
    with pytest.raises(InvalidInput, match="same memory"):
        mem.relate(a.id, a.id, "r")
    with pytest.raises(InvalidInput, match="empty"):
        mem.relate(a.id, 5, " ")
    with pytest.raises(InvalidInput, match="u64"):
        mem.relate(-1, a.id, "r")


def test_unrelate_is_relates_undo_and_idempotent(mem: MemoryService) -> None:
    a, b = mem.remember("decision A"), mem.remember("evidence B")
    mem.relate(a.id, b.id, "r")
    assert mem.unrelate(a.id, b.id, "r").to_dict() == {"found": True, "removed": 1}
    assert mem.unrelate(a.id, b.id, "r").to_dict() == {"found": False, "removed": 0}
    assert mem.unrelate(123, 456, "r").found is False  # ends need not exist
    with pytest.raises(InvalidInput):
        mem.unrelate(a.id, a.id, "r")
    assert len(mem.list_memories().memories) == 2


def test_forget_removes_edges_and_reports_found(mem: MemoryService) -> None:
    a, b = mem.remember("decision A"), mem.remember("evidence B")
    mem.relate(a.id, b.id, "r")
    res = mem.forget(b.id_str)
    assert res.to_dict() == {"id": b.id, "id_str": str(b.id), "found": True}
    assert mem.forget(b.id).found is False
    assert mem.memory_status().memory == {"facts": 1, "edges": 0}
    assert mem.why("decision A").edges == []


def test_forget_removes_orphaned_entity_hubs(mem: MemoryService) -> None:
    a, b = mem.remember("alice likes tea"), mem.remember("alice likes cake")
    hub = entity_hub_id("alice")
    mem.put_internal(hub, "Entity: alice", {}, kind=ENTITY_HUB_KIND)
    for fact in (a, b):
        mem.relate(fact.id, hub, "about")
        mem.relate(hub, fact.id, "mentions")
    mem.forget(a.id)
    assert mem.get_internal(hub) is not None  # b still mentions it
    mem.forget(b.id)
    assert mem.get_internal(hub) is None
    assert mem.memory_status().memory == {"facts": 0, "edges": 0}


def test_why_walks_outgoing_edges_only(mem: MemoryService) -> None:
    dec = mem.remember("we chose parking_lot to avoid lock poisoning")
    pr = mem.remember("PR 77 replaced std mutexes")
    bench = mem.remember("benchmark showed 2x throughput")
    inbound = mem.remember("an unrelated note pointing at the decision")
    mem.relate(dec.id, pr.id, "decided_in")
    mem.relate(pr.id, bench.id, "measured_by")
    mem.relate(inbound.id, dec.id, "cites")
    mem.relate(bench.id, dec.id, "supports")  # back to a visited node: still reported
    why = mem.why("why parking_lot lock poisoning", max_hops=3)
    assert [(n.id, n.hop) for n in why.nodes] == [(dec.id, 0), (pr.id, 1), (bench.id, 2)]
    assert [(e.from_, e.to) for e in why.edges] == [(dec.id, pr.id), (pr.id, bench.id),
                                                    (bench.id, dec.id)]
    assert why.truncated is False
    assert why.to_dict()["edges"][0]["from_str"] == str(dec.id)
    short = mem.why("why parking_lot lock poisoning", max_hops=1)
    assert [n.id for n in short.nodes] == [dec.id, pr.id] and short.truncated is True


def test_why_filter_scopes_the_seed(mem: MemoryService) -> None:
    mem.remember("cache decision for checkout", metadata={"project": "checkout"})
    other = mem.remember("cache decision for search", metadata={"project": "search"})
    why = mem.why("cache decision", filter={"project": "search"})
    assert why.nodes[0].id == other.id
    assert mem.why("cache decision", filter={"project": "none"}).to_dict() == {
        "nodes": [], "edges": [], "truncated": False}


def test_why_hops_bounds(mem: MemoryService) -> None:
    mem.remember("x")
    for bad in (-1, "2", 1.5):
        with pytest.raises(InvalidInput, match="max_hops"):
            mem.why("x", max_hops=bad)  # type: ignore[arg-type]


def test_hops_over_the_cap_are_clamped_not_refused(mem: MemoryService) -> None:
    """max_hops and hops are "capped at 10": 11 walks as 10 does (the reference clamps)."""
    chain = [mem.remember(f"link number {i} of the long chain").id for i in range(13)]
    for a, b in itertools.pairwise(chain):
        mem.relate(a, b, "next")
    deep = mem.why("link number 0 of the long chain", max_hops=limits.MAX_WHY_HOPS + 1)
    assert max(n.hop for n in deep.nodes) == limits.MAX_WHY_HOPS
    assert deep.truncated
    assert deep.to_dict() == mem.why("link number 0 of the long chain",
                                     max_hops=limits.MAX_WHY_HOPS).to_dict()
    fused = mem.recall_fused("link number 0 of the long chain", hops=99, k=20)
    assert fused.to_dict() == mem.recall_fused("link number 0 of the long chain",
                                               hops=limits.MAX_FUSED_HOPS, k=20).to_dict()




def test_why_degree_and_node_budgets(mem: MemoryService) -> None:
    seed = mem.remember("the hub decision everyone cites").id
    leaves = [mem.remember(f"leaf number {i}").id for i in range(limits.MAX_WHY_NODE_DEGREE + 1)]
    for leaf in leaves:
        mem.relate(seed, leaf, "cites")
    why = mem.why("hub decision everyone cites", max_hops=1)
    assert len(why.edges) == limits.MAX_WHY_NODE_DEGREE
    assert len(why.nodes) == limits.MAX_WHY_NODE_DEGREE + 1
    assert why.truncated is True


def test_why_node_and_edge_caps(mem: MemoryService, monkeypatch) -> None:
    monkeypatch.setattr(limits, "MAX_WHY_NODES", 5)
    monkeypatch.setattr(limits, "MAX_WHY_EDGES", 7)
    seed = mem.remember("root of a chain").id
    prev = seed
    for i in range(10):
        nxt = mem.remember(f"chain link {i}").id
        mem.relate(prev, nxt, "next")
        prev = nxt
    walk = mem.why("root of a chain", max_hops=10)
    assert len(walk.nodes) == 5 and walk.truncated is True
    links = [mem.remember(f"spoke {i}").id for i in range(8)]
    for s in links:
        mem.relate(seed, s, "spoke")
    walk = mem.why("root of a chain", max_hops=1)
    assert len(walk.edges) <= 7 and walk.truncated is True


def test_recall_fused_reaches_linked_facts(mem: MemoryService) -> None:
    dec = mem.remember("decision: adopt the outbox pattern for order events")
    pr = mem.remember("PR 310 implemented it")
    problem = mem.remember("duplicated webhooks at midnight")
    for i in range(5):
        mem.remember(f"unrelated chatter {i} about lunch")
    mem.relate(dec.id, pr.id, "implemented_by")
    mem.relate(pr.id, problem.id, "fixes")
    plain = mem.recall("outbox pattern order events", k=3).memories
    assert problem.id not in [m.id for m in plain if m.score > 0]  # shares no word
    fused = mem.recall_fused("outbox pattern order events", k=3)
    ids = [m.id for m in fused.memories]
    assert ids[0] == dec.id and problem.id in ids and pr.id in ids
    graph_only = {m.id: m.score for m in fused.memories}
    assert graph_only[problem.id] == 0.0
    assert mem.recall_fused("outbox pattern order events", k=3, hops=0).memories[0].id == dec.id


def test_recall_fused_dated_context(mem: MemoryService) -> None:
    mem.remember("release 2 shipped", metadata={"_veles_date": 20260302})
    mem.remember("release 1 shipped", metadata={"_veles_date": 20260101})
    res = mem.recall_fused("release shipped", date_field="_veles_date")
    assert res.dated_context == ("- [2026-01-01] release 1 shipped\n"
                                 "- [2026-03-02] release 2 shipped")
    assert res.now == "2026-03-02"
    plain = mem.recall_fused("release shipped")
    assert "dated_context" not in plain.to_dict()
    none = mem.recall_fused("release shipped", date_field="nope")
    assert none.dated_context is None and "dated_context" not in none.to_dict()


def test_recall_fused_refusals(mem: MemoryService) -> None:
    for kwargs, match in (({"hops": -1}, "hops"), ({"graph_boost": float("nan")}, "graph_boost"),
                          ({"pool": "9"}, "pool"), ({"date_field": "a-b"}, "date_field"),
                          ({"k": 0}, "k must")):
        with pytest.raises(InvalidInput, match=match):
            mem.recall_fused("q", **kwargs)

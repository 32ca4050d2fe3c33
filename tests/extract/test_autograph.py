"""Autograph: facts that mention the same identifier meet through its hub, in the background."""

from __future__ import annotations

from pathlib import Path

from velesmem.config import Settings
from velesmem.extract.autograph import Autograph
from velesmem.runtime import Runtime


def open_rt(path: Path, **overrides: object) -> Runtime:
    rt = Runtime.open(Settings(path=path, **overrides))  # type: ignore[arg-type]
    rt.wait_ready_sync(30)
    return rt


def test_why_reaches_the_ticket_through_shared_identifiers_without_relate(tmp_path: Path) -> None:
    with open_rt(tmp_path) as rt:
        m = rt.memory
        ticket = m.remember("EPIC-317: intermittent CI hang under load on the build farm")
        pr = m.remember("PR #42 replaces std::sync::Mutex in the worker pool; fixes EPIC-317")
        decision = m.remember("we picked parking_lot 0.12 for the locks, see PR #42")
        m.remember("lunch menu: pasta on friday")
        assert rt.autograph.wait_idle(10)
        why = m.why("why did we pick parking_lot", max_hops=2)
        hops = {n.id: n.hop for n in why.nodes}
        assert hops[decision.id] == 0 and hops[pr.id] == 1 and hops[ticket.id] == 2
        relations = {(e.from_, e.to): e.relation for e in why.edges}
        assert relations[(decision.id, pr.id)] == "via #42"
        assert relations[(pr.id, ticket.id)] == "via epic-317"
        assert "lunch" not in " ".join(n.content for n in why.nodes)
        # a plain recall does not find the ticket for that question
        assert ticket.id not in [x.id for x in m.recall("why did we pick parking_lot", k=2).memories]
        # hubs are scaffolding: never in recall or list unless asked
        assert all(not x.content.startswith("Entity:") for x in m.list_memories().memories)
        assert m.entity("#42").found and m.entity("EPIC-317").found


def test_recall_fused_folds_graph_reached_facts_in(tmp_path: Path) -> None:
    with open_rt(tmp_path) as rt:
        m = rt.memory
        ticket = m.remember("EPIC-9 nightly builds time out")
        m.remember("switch the scheduler to cron, closes EPIC-9")
        assert rt.autograph.wait_idle(10)
        plain = [x.id for x in m.recall("switch the scheduler to cron", k=5).memories]
        fused = m.recall_fused("switch the scheduler to cron", k=5)
        assert ticket.id in [x.id for x in fused.memories]
        hit = next(x for x in fused.memories if x.id == ticket.id)
        assert hit.score == 0.0 or ticket.id in plain  # graph-only hits report score 0


def test_autograph_off_builds_no_hubs(tmp_path: Path) -> None:
    with open_rt(tmp_path, autograph="off") as rt:
        rt.memory.remember("PR #7 fixes EPIC-1")
        rt.memory.remember("EPIC-1 is the login bug")
        # off, nothing is queued and no worker runs: the queue is empty and idle right away (a
        # fact queued by mistake would stay there, with no worker, and this wait would fail)
        assert rt.autograph.wait_idle(30)
        assert rt.memory.memory_status().memory["edges"] == 0
        assert rt.memory.memory_status().extraction["autograph_active"] is False
        assert rt.autograph.active is False


def test_the_queue_is_bounded_and_drops_are_counted(tmp_path: Path) -> None:
    with open_rt(tmp_path, autograph="off") as rt:
        graph = Autograph(rt.store, "identifiers", rt.clock, maxsize=3)  # no worker runs it
        for i in range(10):
            graph.offer(i, f"PR #{i}")
        assert graph.dropped == 7
    with open_rt(tmp_path / "live") as rt:
        assert rt.memory.memory_status().extraction == {
            "configured": False, "autograph_active": True, "autograph_dropped": 0}


def test_over_common_identifiers_get_no_hub(tmp_path: Path) -> None:
    with open_rt(tmp_path) as rt:
        m = rt.memory
        for i in range(120):  # "#1" in every fact: its idf falls below the floor past 100 facts
            m.remember(f"deployment note {i} mentions #1 and EPIC-{i}")
        assert rt.autograph.wait_idle(30)
        hub_edges = len(rt.store.targets(rt.memory.entity("#1").id - (1 << 64)
                                         if rt.memory.entity("#1").id >= 1 << 63
                                         else rt.memory.entity("#1").id))
        assert hub_edges < 120
        assert m.entity("epic-5").found


def test_a_remember_is_acknowledged_before_it_is_linked(tmp_path: Path) -> None:
    with open_rt(tmp_path) as rt:
        fact = rt.memory.remember("note about PR #99 and EPIC-99")
        assert rt.memory.list_memories().memories[0].id == fact.id  # readable at once
        assert rt.autograph.wait_idle(10)
        assert rt.memory.entity("#99").found

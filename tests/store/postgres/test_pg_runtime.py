"""The whole engine on PostgreSQL: two Runtimes (two daemons) on one database see each other's
writes at once, extraction jobs run once and build their graph, the autograph links facts that
share an identifier."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support import wait_for
from velesmem.config import Settings
from velesmem.ids import entity_hub_id, fact_id
from velesmem.runtime import Runtime

PASSAGE = """\
fact: Camille is Theo's sister | camille, theo durand
fact: Theo Durand is fifteen | theo durand
edge: camille | soeur de | theo durand
attr: theo durand | age | 15
"""


@pytest.fixture
def runtimes(postgres_settings: Settings) -> Iterator[Callable[..., Runtime]]:
    opened: list[Runtime] = []

    def open_one(**overrides: object) -> Runtime:
        rt = Runtime.open(postgres_settings.with_overrides(embedder="hash", **overrides))
        rt.wait_ready_sync(30)
        opened.append(rt)
        return rt

    yield open_one
    for rt in opened:
        rt.close()


def _wait(rt: Runtime, request_id: str) -> dict:
    def finished() -> dict | None:
        status = rt.extraction.extraction_status(request_id)
        return status if status["state"] in ("committed", "failed") else None

    return wait_for(finished, what=f"extraction job {request_id} to finish")


def test_a_write_through_one_daemon_is_recalled_through_the_other_at_once(runtimes) -> None:
    a, b = runtimes(autograph="off"), runtimes(autograph="off")
    for n in range(20):
        fact = f"decision {n}: shard the queue by tenant {n * 7}"
        got = a.memory.remember(fact)
        assert b.memory.recall(fact, k=1).memories[0].id == got.id  # no warm-up, no delay
    b.memory.feedback(got.id, True)
    assert a.memory.confidences([got.id]) == {got.id: 0.6}
    assert a.memory.forget(got.id).found and b.memory.recall(fact, k=1).memories[0].id != got.id


def test_extraction_jobs_run_once_across_two_daemons_and_build_the_graph(runtimes) -> None:
    a, b = runtimes(autograph="off"), runtimes(autograph="off")
    receipts = [a.extraction.remember_extracted(PASSAGE + f"fact: note {n} | camille\n",
                                                extractor="outline") for n in range(6)]
    statuses = [_wait(b, r["request_id"]) for r in receipts]
    assert all(s["state"] == "committed" for s in statuses)
    with a.store._conn() as conn:  # type: ignore[attr-defined]
        attempts = [r[0] for r in conn.execute("SELECT attempts FROM jobs")]
    assert len(attempts) == 6 and set(attempts) <= {1}  # claimed once each (or run in place)
    theo = b.memory.entity("Theo Durand").to_dict()
    assert theo["found"] and theo["id"] == entity_hub_id("theo durand")
    assert theo["attributes"] == {"age": 15}
    assert [(r["predicate"], r["source"]) for r in theo["relations_in"]] == [
        ("soeur de", "camille")]
    assert fact_id("Theo Durand is fifteen") in {m.id for m in a.memory.list_memories().memories}


def test_the_autograph_links_facts_through_identifier_hubs(runtimes) -> None:
    rt = runtimes()
    m = rt.memory
    ticket = m.remember("EPIC-317: intermittent CI hang under load on the build farm")
    pr = m.remember("PR #42 replaces std::sync::Mutex in the worker pool; fixes EPIC-317")
    decision = m.remember("we picked parking_lot 0.12 for the locks, see PR #42")
    assert rt.autograph.wait_idle(10)
    hops = {n.id: n.hop for n in m.why("why did we pick parking_lot", max_hops=2).nodes}
    assert hops[decision.id] == 0 and hops[pr.id] == 1 and hops[ticket.id] == 2
    assert all(not x.content.startswith("Entity:") for x in m.list_memories().memories)

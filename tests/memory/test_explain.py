"""The dashboard's score breakdown (``MemoryService.explain``): computed beside the ranking, it
must agree with it — the facts recall returns come in descending breakdown key, the parts add up
to the key, and the tool results do not change. If the fusion in ranking.py changes, these fail
until explain.py follows."""

from __future__ import annotations

import pytest

from velesmem.memory import MemoryService

FACTS = [
    "the payment provider timeout was set to 8 seconds",
    "payment retries are capped at three attempts",
    "the provider of the office coffee changed in May",
    "a timeout in the payment gateway paged the on-call",
    "the cat sat on the mat by the door",
    "the payment team meets on Tuesdays",
]


@pytest.fixture
def seeded(mem: MemoryService) -> MemoryService:
    for n, text in enumerate(FACTS):
        mem.remember(text, metadata={"n": n})
    for text in FACTS[:3]:
        mem.feedback(mem.remember(text).id, True)  # confidences differ
    return mem


@pytest.mark.parametrize("query", ["payment timeout", "who provides the coffee", "retries"])
def test_recall_order_follows_the_breakdown_key(seeded: MemoryService, query: str) -> None:
    hits = seeded.recall_where(query, [], k=len(FACTS)).memories
    assert hits
    signals = seeded.explain(query, [m.id for m in hits])
    keys = [signals[m.id].key for m in hits]
    assert keys == sorted(keys, reverse=True)


def test_the_parts_add_up_to_the_key_and_cosine_is_the_recall_score(seeded: MemoryService) -> None:
    hits = seeded.recall("payment timeout", k=4).memories
    signals = seeded.explain("payment timeout", [m.id for m in hits])
    for m in hits:
        s = signals[m.id]
        assert s.key == pytest.approx(s.text_part + s.vector_part + s.age_part)
        assert s.vector == pytest.approx(m.score, abs=1e-6)
        assert 0.0 <= s.text <= 1.0 and s.graph == 0.0
        assert s.confidence_factor == pytest.approx(1.0 + 0.5 * (2 * s.confidence - 1))


def test_explaining_changes_no_tool_result(seeded: MemoryService) -> None:
    where = [{"field": "n", "op": "lt", "value": 4}]
    before = seeded.recall_where("payment timeout", where).to_dict()
    seeded.explain("payment timeout", [m["id"] for m in before["memories"]], where)
    assert seeded.recall_where("payment timeout", where).to_dict() == before


def test_recall_fused_reports_its_parts_off_the_wire(seeded: MemoryService) -> None:
    hits = seeded.recall("payment timeout", k=2).memories
    seeded.relate(hits[0].id, seeded.remember("the cat sat on the mat by the door").id, "near")
    fused = seeded.recall_fused("payment timeout", k=6)
    totals = [fused.hybrid[m.id] + fused.graph[m.id] for m in fused.memories]
    assert totals == sorted(totals, reverse=True)
    assert any(part > 0 for part in fused.graph.values())
    assert set(fused.to_dict()) == {"memories"}

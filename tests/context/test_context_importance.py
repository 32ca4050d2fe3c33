"""policy.importance: learned confidence and batch recency re-rank the pulled pool, never widen it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from context_helpers import request

from velesmem.context.service import ContextService
from velesmem.memory.results import FusedResult, Memory


@dataclass
class Recaller:
    """A stand-in for MemoryService's fused recall and confidence read (unit test only)."""

    memories: list[Memory]
    confidence: dict[int, float] = field(default_factory=dict)
    calls: list[dict] = field(default_factory=list)

    def recall_fused(self, query, k=10, filter=None, hops=2, graph_boost=0.15):
        self.calls.append({"k": k, "filter": filter, "hops": hops, "graph_boost": graph_boost})
        return FusedResult(self.memories[:k])

    def confidences(self, ids):
        return {i: self.confidence.get(i, 0.5) for i in ids}


POOL = [Memory(11, 0.9, "wordy similar fact about the deploy", {"day": 20260101}),
        Memory(22, 0.0, "the real fix: raise the pool minimum", {"day": 20260301})]


def pulled_order(out: dict) -> list[int]:
    return [d["memory_id"] for d in out["decisions"] if d["memory_id"] is not None]


def test_zero_weights_keep_the_fused_order() -> None:
    recaller = Recaller(POOL, {22: 1.0})
    out = ContextService(memory=recaller).compile_context(request(
        ["x"], memory_scope={"k": 2, "project": "p", "hops": 1, "graph_boost": 0.3},
        policy={"importance": {"confidence": 0, "recency": 0}}))
    assert pulled_order(out) == [11, 22]
    assert recaller.calls == [{"k": 2, "filter": {"project": "p"}, "hops": 1, "graph_boost": 0.3}]


def test_learned_confidence_promotes_a_reinforced_memory_and_the_reason_shows_it() -> None:
    out = ContextService(memory=Recaller(POOL, {22: 1.0})).compile_context(request(
        ["x"], memory_scope={"k": 2}, policy={"importance": {"confidence": 0.8}}))
    assert pulled_order(out) == [22, 11]
    reason = next(d["reason"] for d in out["decisions"] if d["memory_id"] == 22)
    assert "confidence 1.00" in reason


def test_recency_needs_a_field_and_is_relative_to_the_batch() -> None:
    plain = ContextService(memory=Recaller(POOL)).compile_context(request(
        ["x"], memory_scope={"k": 2}, policy={"importance": {"recency": 5.0}}))
    assert pulled_order(plain) == [11, 22]  # no recency_field: the term is inert
    dated = ContextService(memory=Recaller(POOL)).compile_context(request(
        ["x"], memory_scope={"k": 2}, policy={"importance": {"recency": 5.0, "recency_field": "day"}}))
    assert pulled_order(dated) == [22, 11]


def test_confidence_never_widens_the_pool() -> None:
    out = ContextService(memory=Recaller(POOL, {22: 1.0})).compile_context(request(
        ["x"], memory_scope={"k": 1}, policy={"importance": {"confidence": 10.0}}))
    assert pulled_order(out) == [11]


def test_an_empty_query_skips_the_recall_with_a_warning() -> None:
    recaller = Recaller(POOL)
    out = ContextService(memory=recaller).compile_context(request(["x"], query=" ", memory_scope={"k": 2}))
    assert recaller.calls == [] and any("empty query" in w for w in out["warnings"])


def test_feedback_in_a_real_store_promotes_the_reinforced_memory(tmp_path) -> None:
    """The confidence term reads what feedback wrote, through the real MemoryService."""
    import velesmem
    from velesmem.config import Settings

    with velesmem.open(tmp_path, settings=Settings(path=tmp_path)).memory as memory:
        first = memory.remember("deploy canary pool minimum raised after the review",
                                metadata={"project": "p"}).id
        second = memory.remember("deploy canary pool", metadata={"project": "p"}).id
        memory.feedback(first, True)  # 0.6: too little to reorder recall by itself
        assert memory.confidences([first, second, 12345]) == pytest.approx({first: 0.6, second: 0.5})
        service = ContextService(memory=memory)
        plain = service.compile_context(request(
            ["x"], query="deploy canary pool", memory_scope={"k": 2, "project": "p"},
            policy={"importance": {"confidence": 0}}))
        assert pulled_order(plain) == [second, first]
        weighted = service.compile_context(request(
            ["x"], query="deploy canary pool", memory_scope={"k": 2, "project": "p"},
            policy={"importance": {"confidence": 5.0}}))
        assert pulled_order(weighted) == [first, second]

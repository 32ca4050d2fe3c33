"""The compiler's persistence through a real MemoryService: sources, savings, working contexts, memory_scope."""

from __future__ import annotations

import pytest

from context_helpers import media_fragment, png_b64, request
from velesmem import limits
from velesmem.context import store as store_module
from velesmem.context.ingest import IngestRoots
from velesmem.context.service import ContextService
from velesmem.context.store import MemoryContextStore
from velesmem.errors import NotFound
from velesmem.ids import source_handle, working_context_id


@pytest.fixture
def service(memory) -> ContextService:
    return ContextService(MemoryContextStore(memory), IngestRoots(), memory)


def test_every_distinct_source_is_retrievable_byte_for_byte_media_included(service) -> None:
    b64 = png_b64(200, 200)
    text = "Rollback runbook: kubectl rollout undo deployment/canary.\n\ncafé ☕"
    out = service.compile_context(request([text, media_fragment(b64, "the failing build")], budget=1))
    handles = {s["handle"] for s in out["sources"]}
    assert len(handles) == 2 and len(out["retrieval_handles"]) == 2
    got = [service.retrieve(h) for h in sorted(handles)]
    by_content = {g["content"]: g for g in got}
    assert by_content[text] == {"handle": by_content[text]["handle"], "content": text}
    image = by_content["the failing build"]
    assert image["media"] == {"mime": "image/png", "bytes_b64": b64}


def test_a_text_source_identical_to_a_remembered_fact_does_not_touch_the_fact(service, memory) -> None:
    fact = memory.remember("the canary runs at 2% traffic")
    service.compile_context(request(["the canary runs at 2% traffic"]))
    listed = memory.list_memories()
    assert [m.id for m in listed.memories] == [fact.id]


def test_compiler_scaffolding_is_invisible_to_recall_and_list(service, memory) -> None:
    service.compile_context(request(["secret scaffolding text about canaries"], project="p"))
    service.save_working("p", "s", {"goal": "canaries everywhere"})
    assert memory.list_memories().memories == []
    assert memory.recall("canaries", k=10).memories == []


def test_source_ttl_expires_with_the_store_clock(service, clock) -> None:
    out = service.compile_context(request(["short lived log line"], policy={"source_ttl_seconds": 60}))
    handle = out["sources"][0]["handle"]
    assert service.retrieve(handle)["content"] == "short lived log line"
    clock.now += 61
    with pytest.raises(NotFound):
        service.retrieve(handle)


def test_explain_records_nothing(service) -> None:
    service.explain(request(["never stored"]), "1", 0)
    assert service.savings()["events"] == 0
    with pytest.raises(NotFound):
        service.retrieve(source_handle(b"never stored"))


def test_explain_fragment_index_wins_over_a_shared_fragment_id(service) -> None:
    req = request(["same", "same"])
    out = service.compile_context(req)
    fid = out["decisions"][0]["fragment_id"]
    assert service.explain(req, fid)["action"] == "preserve"
    assert service.explain(req, str(fid), 1)["rule_id"] == "drop.duplicate"


def test_savings_aggregate_per_project_with_event_ttl(service, clock) -> None:
    pricing = {"version": "t", "currency": "USD", "models": {"m": {"input_micros_per_million_tokens": 1_000_000}}}
    for project in ("a", "a", "b"):
        service.compile_context(request(["word " * 300], budget=10, project=project, target_model="m",
                                        policy={"pricing": pricing, "event_ttl_seconds": 100}))
    a = service.savings("a")
    assert a["events"] == 2 and a["tokens_saved"] > 0 and a["truncated"] is False
    assert a["cost_saved_micros_by_currency"] == {"USD": a["tokens_saved"]}
    assert service.savings()["events"] == 3
    clock.now += 101
    assert service.savings()["events"] == 0


def test_savings_series_sums_the_same_events_per_day_oldest_first(service, clock) -> None:
    day = limits.SAVINGS_BUCKET_SECONDS
    clock.now = 100 * day + 5
    for _ in range(2):
        service.compile_context(request(["word " * 300], budget=10, project="p"))
    clock.now = 102 * day + 7
    service.compile_context(request(["word " * 300], budget=10, project="p"))
    series = service.savings_series("p")
    assert series["bucket_seconds"] == day and series["truncated"] is False
    assert [(pt["start"], pt["events"]) for pt in series["points"]] == [(100 * day, 2), (102 * day, 1)]
    total = service.savings("p")
    assert sum(pt["tokens_saved"] for pt in series["points"]) == total["tokens_saved"] > 0
    assert sum(pt["tokens_in"] for pt in series["points"]) == total["tokens_in"]
    assert service.savings_series("other")["points"] == []


def test_savings_report_truncation_at_the_sweep_cap(service, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "MAX_SAVINGS_EVENTS", 2)
    for _ in range(3):
        service.compile_context(request(["x y"], project="t"))
    out = service.savings("t")
    assert out["events"] == 2 and out["truncated"] is True


def test_working_context_upsert_index_newest_first_and_ids_as_strings(service, clock) -> None:
    big = 2**64 - 1
    working = {"goal": "ship", "verified_facts": [{"text": "green", "fragment_id": big, "memory_id": str(2**53 + 1)}],
               "pending_actions": ["promote"]}
    saved = service.save_working("proj", "run-1", working)
    assert saved == {"id": working_context_id("proj", "run-1"), "id_str": str(working_context_id("proj", "run-1"))}
    clock.now += 10
    service.save_working("proj", "run-2", {"goal": "other"})
    clock.now += 10
    service.save_working("proj", "run-1", {**working, "goal": "ship it"})  # upsert refreshes the index
    listed = service.list_working("proj")["sessions"]
    assert [s["session"] for s in listed] == ["run-1", "run-2"]
    assert listed[0]["saved_at"] == int(clock.now)
    loaded = service.load_working("proj", "run-1")
    assert loaded["found"] is True and loaded["working"]["goal"] == "ship it"
    fact = loaded["working"]["verified_facts"][0]
    assert fact == {"text": "green", "fragment_id": str(big), "memory_id": str(2**53 + 1)}
    assert loaded["working"]["pending_actions"] == [{"text": "promote"}]
    assert loaded["other_sessions"] == ["run-2"]
    missing = service.load_working("proj", "run-l")
    assert missing == {"found": False, "working": None, "other_sessions": ["run-1", "run-2"]}
    assert service.list_working("nobody") == {"sessions": []}


def test_a_forgotten_working_context_leaves_the_listing(service, memory) -> None:
    saved = service.save_working("p", "s", {"goal": "g"})
    memory.forget(saved["id_str"])
    assert service.list_working("p") == {"sessions": []}
    assert service.load_working("p", "s")["found"] is False


def test_memory_scope_pulls_relevant_memories_with_an_explained_reason(service, memory) -> None:
    rel = memory.remember("the canary rollback uses kubectl rollout undo", metadata={"project": "veles"})
    memory.remember("lunch is at noon on fridays", metadata={"project": "other"})
    out = service.compile_context(request(["current state: canary red"], query="canary rollback kubectl",
                                          project="veles", memory_scope={"k": 3}))
    pulled = [d for d in out["decisions"] if d["memory_id"] is not None]
    assert [d["memory_id"] for d in pulled] == [rel.id]
    assert pulled[0]["reason"].startswith(f"pulled from memory {rel.id} (fused 1.00, vector ")
    assert "kubectl rollout undo" in out["content"]
    no_memory = ContextService().compile_context(request(["x"], memory_scope={"k": 3}))
    assert any("memory_scope ignored" in w for w in no_memory["warnings"])


def test_limits_named_in_the_contract_are_the_ones_used() -> None:
    assert limits.MAX_MEDIA_B64_BYTES == 4 * limits.MIB
    assert limits.MAX_TRANSCRIPT_BYTES == 8 * limits.MIB
    assert limits.MAX_WORKING_CONTEXT_BYTES == limits.MIB

"""remember_extracted as durable jobs, the entity graph it builds, entity, and why through hubs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer, ollama

from tests.support import wait_for
from velesmem.config import Settings
from velesmem.errors import Internal, InvalidInput, NotFound
from velesmem.ids import entity_hub_id, fact_id
from velesmem.runtime import Runtime

PASSAGE = """\
fact: Camille is Theo's sister | camille, theo durand
fact: Theo Durand is fifteen | theo durand
edge: camille | soeur de | theo durand
edge: theo durand | frere de | camille
attr: theo durand | age | 15
The family moved to Lyon in 2019
"""


def wait_state(rt: Runtime, request_id: str) -> dict:
    def finished() -> dict | None:
        status = rt.extraction.extraction_status(request_id)
        return status if status["state"] in ("committed", "failed") else None

    return wait_for(finished, what=f"extraction job {request_id} to finish")


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime.open(Settings(path=tmp_path / "store", autograph="off"))
    runtime.wait_ready_sync(30)
    try:
        yield runtime
    finally:
        runtime.close()


def test_outline_extraction_builds_facts_hubs_and_edges(rt: Runtime) -> None:
    receipt = rt.extraction.remember_extracted(PASSAGE, metadata={"project": "family"},
                                               extractor="outline")
    assert receipt["state"] == "accepted" and receipt["reused"] is False
    assert len(receipt["request_id"]) == 64
    status = wait_state(rt, receipt["request_id"])
    assert status["state"] == "committed" and status["error"] is None
    texts = ["Camille is Theo's sister", "Theo Durand is fifteen",
             "The family moved to Lyon in 2019"]
    assert status["ids"] == [fact_id(t) for t in texts]
    assert status["ids_str"] == [str(fact_id(t)) for t in texts]
    assert status["skipped_over_cap"] == 0
    listed = rt.memory.list_memories().memories
    assert sorted(m.content for m in listed) == sorted(texts)  # hubs stay invisible
    assert all(m.metadata["project"] == "family" for m in listed)
    everything = rt.memory.list_memories(include_internal=True, limit=100).memories
    hubs = {m.content for m in everything} - set(texts)
    assert hubs == {"Entity: camille", "Entity: theo durand"}


def test_entity_answers_who_is_theos_sister_through_relations_in(rt: Runtime) -> None:
    wait_state(rt, rt.extraction.remember_extracted(PASSAGE, extractor="outline")["request_id"])
    theo = rt.memory.entity("  Theo Durand ").to_dict()
    assert theo["found"] is True and theo["name"] == "theo durand"
    assert theo["id"] == entity_hub_id("theo durand") and theo["id_str"] == str(theo["id"])
    assert theo["attributes"] == {"age": 15}
    assert [(r["predicate"], r["source"]) for r in theo["relations_in"]] == [
        ("soeur de", "camille")]
    assert [(r["predicate"], r["target"]) for r in theo["relations"]] == [("frere de", "camille")]
    assert theo["relations"][0]["target_id_str"] == str(entity_hub_id("camille"))
    assert theo["relations_truncated"] is False and theo["relations_in_truncated"] is False
    nobody = rt.memory.entity("Nobody At All").to_dict()
    assert nobody["found"] is False and nobody["name"] == "nobody at all"


def test_entity_relations_are_capped_and_the_cut_is_reported(rt: Runtime) -> None:
    lines = [f"edge: hub{i} | points at | star" for i in range(70)]
    wait_state(rt, rt.extraction.remember_extracted("\n".join(lines),
                                                    extractor="outline")["request_id"])
    star = rt.memory.entity("star").to_dict()
    assert len(star["relations_in"]) == 64 and star["relations_in_truncated"] is True
    assert star["relations"] == [] and star["relations_truncated"] is False


def test_why_reaches_a_fact_through_an_entity_it_shares_with_the_seed(rt: Runtime) -> None:
    wait_state(rt, rt.extraction.remember_extracted(
        "fact: the billing service retries payments three times | billing\n"
        "fact: a quarterly audit found duplicated invoices | billing", extractor="outline")[
        "request_id"])
    why = rt.memory.why("billing service retries payments", max_hops=1)
    contents = {n.content: n.hop for n in why.nodes}
    assert contents == {"the billing service retries payments three times": 0,
                        "a quarterly audit found duplicated invoices": 1}
    assert [e.relation for e in why.edges] == ["via billing"]


def test_forget_collects_orphan_hubs(rt: Runtime) -> None:
    status = wait_state(rt, rt.extraction.remember_extracted(
        "fact: only fact about zebras | zebras", extractor="outline")["request_id"])
    assert rt.memory.entity("zebras").found
    rt.memory.forget(status["ids"][0])
    assert not rt.memory.entity("zebras").found


def test_same_key_same_payload_is_reused_and_a_changed_payload_refused(rt: Runtime) -> None:
    first = rt.extraction.remember_extracted("fact: a | t", extractor="outline",
                                             idempotency_key="k1")
    again = rt.extraction.remember_extracted("fact: a | t", extractor="outline",
                                             idempotency_key="k1")
    assert again["request_id"] == first["request_id"] and again["reused"] is True
    with pytest.raises(InvalidInput, match="idempotency_key was already used"):
        rt.extraction.remember_extracted("fact: b | t", extractor="outline",
                                         idempotency_key="k1")
    with pytest.raises(InvalidInput, match="idempotency_key"):
        rt.extraction.remember_extracted("x", extractor="outline", idempotency_key="k" * 257)


def test_without_a_key_an_identical_request_is_content_addressed(rt: Runtime) -> None:
    a = rt.extraction.remember_extracted("fact: same text | t", extractor="outline")
    wait_state(rt, a["request_id"])
    b = rt.extraction.remember_extracted("fact: same text | t", extractor="outline")
    assert b == {"request_id": a["request_id"], "state": "committed", "reused": True}
    c = rt.extraction.remember_extracted("fact: same text | t", extractor="outline",
                                         metadata={"other": 1})
    assert c["request_id"] != a["request_id"]


def test_malformed_directives_fail_the_job_and_store_nothing(rt: Runtime) -> None:
    receipt = rt.extraction.remember_extracted("fact: fine | t\nedge: only two | parts",
                                               extractor="outline")
    status = wait_state(rt, receipt["request_id"])
    assert status["state"] == "failed" and "line 2" in status["error"]
    assert status["ids"] == [] and status["skipped_over_cap"] is None
    assert rt.memory.list_memories(include_internal=True).memories == []


def test_facts_over_the_cap_are_counted_not_truncated(rt: Runtime) -> None:
    long = "word " * 500
    status = wait_state(rt, rt.extraction.remember_extracted(
        f"fact: short one | t\nfact: {long.strip()} | t", extractor="outline")["request_id"])
    assert status["state"] == "committed" and status["skipped_over_cap"] == 1
    assert status["ids"] == [fact_id("short one")]


def test_a_terminal_job_keeps_its_result_but_drops_the_passage(rt: Runtime) -> None:
    receipt = rt.extraction.remember_extracted("fact: the secret passage | t",
                                               extractor="outline")
    wait_state(rt, receipt["request_id"])
    job = rt.store.get_job(receipt["request_id"])
    assert job.payload is None and job.output is None and job.result["ids"]
    row = rt.store.reader().execute("SELECT payload, output FROM jobs").fetchone()
    assert row == (None, None)


def test_status_refuses_a_malformed_id_and_reports_an_unknown_one(rt: Runtime) -> None:
    with pytest.raises(InvalidInput, match="64-character"):
        rt.extraction.extraction_status("ABC")
    with pytest.raises(NotFound):
        rt.extraction.extraction_status("0" * 64)


def test_a_named_remote_extractor_that_is_not_configured_is_invalid_input_and_none_is_internal(
        rt: Runtime) -> None:
    with pytest.raises(InvalidInput, match="not configured"):
        rt.extraction.remember_extracted("text", extractor="ollama")
    with pytest.raises(Internal, match="no extractor is configured"):  # the contract: -32603
        rt.extraction.remember_extracted("text")
    assert rt.store.pending_jobs("extract", 100) == []


def test_at_most_64_jobs_wait(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VELESMEM_INTERNAL_EXTRACT_PAUSE", "before_output")
    with Runtime.open(Settings(path=tmp_path, autograph="off")) as rt:
        rt.wait_ready_sync(30)
        for i in range(64):
            rt.extraction.remember_extracted(f"fact: number {i} | t", extractor="outline")
        with pytest.raises(InvalidInput, match="64 extract jobs are still pending"):
            rt.extraction.remember_extracted("fact: one too many | t", extractor="outline")
        assert len(rt.store.pending_jobs("extract", 100)) == 64


def test_an_ollama_extraction_commits_what_the_model_answered(tmp_path: Path,
                                                              chat_server: ChatServer) -> None:
    chat_server.script(ollama("fact: the model read this | reading\nedge: reading | part of | "
                              "study"))
    settings = Settings(path=tmp_path, autograph="off", extractor="ollama",
                        extractor_url=chat_server.url, extractor_model="m")
    with Runtime.open(settings) as rt:
        rt.wait_ready_sync(30)
        receipt = rt.extraction.remember_extracted("some raw passage about reading")
        status = wait_state(rt, receipt["request_id"])
        assert status["state"] == "committed", status
        assert status["ids"] == [fact_id("the model read this")]
        assert rt.memory.entity("reading").relations[0]["target"] == "study"
        assert rt.memory.memory_status().extraction["configured"] is True


def test_a_malformed_model_reply_fails_the_job_with_the_reason(tmp_path: Path,
                                                              chat_server: ChatServer) -> None:
    chat_server.script(ollama("Sure! Here are facts:\nfact: one | t\nsome prose in the middle\n"
                              "fact: two | t"))
    settings = Settings(path=tmp_path, autograph="off", extractor="ollama",
                        extractor_url=chat_server.url, extractor_model="m")
    with Runtime.open(settings) as rt:
        rt.wait_ready_sync(30)
        status = wait_state(rt, rt.extraction.remember_extracted("passage")["request_id"])
        assert status["state"] == "failed" and status["error"]
        assert rt.memory.list_memories(include_internal=True).memories == []

"""recall / recall_where: ranking, score, filters, k bounds, u64 ids, and a brute-force oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import velesmem
from velesmem import limits
from velesmem.errors import InvalidInput
from velesmem.ids import fact_id
from velesmem.memory import MemoryService
from velesmem.store.sqlite import vector_index


def high_id_texts(n: int) -> list[str]:
    """Texts whose FNV id is at or above 2^63 (negative as int64)."""
    out, i = [], 0
    while len(out) < n:
        text = f"release {i} shipped the payment retries"
        if fact_id(text) >= 1 << 63:
            out.append(text)
        i += 1
    return out


def test_score_is_the_raw_cosine(mem: MemoryService) -> None:
    mem.remember("billing retries are capped at three")
    got = mem.recall("billing retries").memories[0]
    q, f = mem.embedder.embed(["billing retries", "billing retries are capped at three"])
    assert got.score == pytest.approx(float(q @ f), abs=1e-6)


def test_hybrid_puts_the_lexical_match_first(mem: MemoryService) -> None:
    mem.remember("the cat sat on the mat")
    mem.remember("a payment provider timeout was set to 8 seconds")
    mem.remember("the dog chased the cat around the garden")
    top = mem.recall("what timeout does the payment provider use?", k=3).memories
    assert top[0].content.startswith("a payment provider timeout")


def test_k_bounds(mem: MemoryService) -> None:
    for n in range(5):
        mem.remember(f"note number {n} about deploys")
    assert len(mem.recall("deploys").memories) == 5
    assert len(mem.recall("deploys", k=2).memories) == 2
    assert len(mem.recall("deploys", k=limits.MAX_RECALL_LIMIT).memories) == 5
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(InvalidInput, match="k must"):
            mem.recall("deploys", k=bad)  # type: ignore[arg-type]


def test_k_over_the_cap_is_clamped_not_refused(mem: MemoryService) -> None:
    """The contract says k is "capped at 1000": a bigger k reads as 1000, as the reference does."""
    for n in range(3):
        mem.remember(f"note number {n} about deploys")
    assert len(mem.recall("deploys", k=limits.MAX_RECALL_LIMIT + 1).memories) == 3
    assert len(mem.recall_where("deploys", [], k=10**9).memories) == 3
    assert len(mem.recall_fused("deploys", k=5000).memories) == 3


def test_empty_query_is_refused(mem: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="query"):
        mem.recall("  ")


def test_exact_filter_is_type_strict(mem: MemoryService) -> None:
    mem.remember("string ts", metadata={"ts": "20230601", "project": "a"})
    mem.remember("number ts", metadata={"ts": 20230601, "project": "a"})
    mem.remember("nested", metadata={"tags": ["x", "y"], "o": {"b": 1, "a": 2}})
    assert [m.content for m in mem.recall("ts", filter={"ts": 20230601}).memories] == ["number ts"]
    assert [m.content for m in mem.recall("ts", filter={"ts": "20230601"}).memories] == [
        "string ts"]
    assert [m.content for m in mem.recall("nested", filter={"tags": ["x", "y"]}).memories] == [
        "nested"]
    assert [m.content for m in mem.recall("nested", filter={"o": {"a": 2, "b": 1}}).memories] == [
        "nested"]
    assert mem.recall("ts", filter={"project": "b"}).memories == []
    with pytest.raises(InvalidInput, match="reserved"):
        mem.recall("ts", filter={"_veles_kind": "x"})


def test_confidence_reorders_recall_but_not_the_score(vmem: MemoryService) -> None:
    a = vmem.remember("alpha beta gamma delta")
    b = vmem.remember("alpha beta gamma epsilon")
    first = vmem.recall("alpha beta gamma", k=2).memories
    loser = first[1].id
    for _ in range(5):
        vmem.feedback(loser, True)
    for _ in range(5):
        vmem.feedback(first[0].id, False)
    again = vmem.recall("alpha beta gamma", k=2).memories
    assert again[0].id == loser and {a.id, b.id} == {m.id for m in again}
    assert again[0].score == pytest.approx(first[1].score)


def test_ids_above_2_63_round_trip(mem: MemoryService) -> None:
    texts = high_id_texts(3)
    ids = [mem.remember(t).id for t in texts]
    assert all(i >= 1 << 63 for i in ids)
    got = mem.recall("payment retries", k=10).memories
    assert {m.id for m in got} == set(ids)
    assert all(m.to_dict()["id_str"] == str(m.id) for m in got)
    mem.relate(str(ids[0]), ids[1], "follows")
    assert mem.forget(str(ids[2])).found
    assert {m.id for m in mem.recall("payment retries").memories} == set(ids[:2])


def test_forgotten_and_internal_facts_never_come_back(mem: MemoryService) -> None:
    keep = mem.remember("keep this deploy note")
    gone = mem.remember("drop this deploy note")
    mem.put_internal(77, "deploy note scaffolding", {"project": "x"}, kind="source")
    mem.forget(gone.id)
    assert [m.id for m in mem.recall("deploy note").memories] == [keep.id]
    assert [m.id for m in mem.recall_where("deploy note", [
        {"field": "project", "op": "ne", "value": "zzz"}]).memories] == []


# --- recall_where --------------------------------------------------------------------------

@pytest.fixture
def dated(mem: MemoryService) -> MemoryService:
    mem.remember("jan incident", metadata={"_veles_date": 20260105, "sev": 2, "ok": True})
    mem.remember("feb incident", metadata={"_veles_date": 20260210, "sev": 1.5, "ok": False})
    mem.remember("mar incident", metadata={"_veles_date": 20260301, "sev": "high"})
    mem.remember("undated incident", metadata={"sev": None})
    return mem


def where(mem: MemoryService, *preds: tuple) -> set[str]:
    filters = [{"field": f, "op": o, "value": v} for f, o, v in preds]
    return {m.content for m in mem.recall_where("incident", filters, k=10).memories}


def test_recall_where_ranges_and_types(dated: MemoryService) -> None:
    assert where(dated, ("_veles_date", "ge", 20260101), ("_veles_date", "le", 20260131)) == {
        "jan incident"}
    assert where(dated, ("sev", "gt", 1)) == {"jan incident", "feb incident"}
    assert where(dated, ("sev", "eq", "high")) == {"mar incident"}
    assert where(dated, ("sev", "ne", 2)) == {"feb incident"}  # absent/null/str never match
    assert where(dated, ("ok", "eq", True)) == {"jan incident"}
    assert where(dated, ("ok", "ne", True)) == {"feb incident"}
    assert where(dated, ("sev", "eq", "2")) == set()
    assert where(dated, ("missing", "ne", "x")) == set()


@pytest.mark.parametrize("pred,match", [
    ({"field": "ok", "op": "lt", "value": True}, "booleans support eq and ne"),
    ({"field": "sev", "op": "like", "value": 1}, "op must be one of"),
    ({"field": "sev", "op": "eq", "value": None}, "string, number or boolean"),
    ({"field": "sev", "op": "eq", "value": [1]}, "string, number or boolean"),
    ({"field": "se-v", "op": "eq", "value": 1}, "ASCII letters"),
    ({"field": "content", "op": "eq", "value": "x"}, "reserved"),
    ({"field": "_veles_kind", "op": "eq", "value": "x"}, "reserved"),
    ({"field": "sev", "op": "eq"}, "exactly field, op and value"),
])
def test_recall_where_refusals(dated: MemoryService, pred: dict, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        dated.recall_where("incident", [pred])


# --- a brute-force oracle --------------------------------------------------------------------

WORDS = ["red", "green", "blue", "fast", "slow", "cache", "disk", "net", "cpu", "lock"]
fact_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
record_st = st.tuples(fact_st, st.sampled_from(["a", "b", "c"]), st.integers(0, 5))


def oracle(mem: MemoryService, facts: dict[str, tuple[str, int]], query: str, k: int,
           project: str | None, min_n: int | None) -> list[int]:
    q = mem.embedder.embed([query])[0]
    scored = []
    for text, (proj, n) in facts.items():
        if project is not None and proj != project:
            continue
        if min_n is not None and not n >= min_n:
            continue
        sim = float(mem.embedder.embed([text])[0] @ q)
        scored.append((-round(sim, 5), fact_id(text), fact_id(text)))
    scored.sort()
    return [i for _, _, i in scored[:k]]


def check_against_oracle(mem: MemoryService, records: list, query: str, k: int,
                         project: str | None, min_n: int | None) -> None:
    facts = {}
    for text, proj, n in records:
        mem.remember(text, metadata={"project": proj, "n": n})
        facts[text.strip()] = (proj, n)
    if min_n is None:
        got = mem.recall(query, k=k, filter=None if project is None else {"project": project})
    else:
        preds = [{"field": "n", "op": "ge", "value": min_n}]
        if project is not None:
            preds.append({"field": "project", "op": "eq", "value": project})
        got = mem.recall_where(query, preds, k=k)
    want = oracle(mem, facts, query, k, project, min_n)
    got_sims = [round(m.score, 5) for m in got.memories]
    q = mem.embedder.embed([query])[0]
    want_sims = sorted((round(float(mem.embedder.embed([t])[0] @ q), 5) for t in facts
                        if fact_id(t) in want), reverse=True)
    assert got_sims == want_sims  # same similarity profile: the true top-k among the matches
    assert len(got.memories) == len(want)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(record_st, min_size=1, max_size=30), query=fact_st,
       k=st.integers(1, 8), project=st.sampled_from([None, "a", "b"]),
       min_n=st.sampled_from([None, 0, 3]))
def test_filtered_recall_matches_the_oracle(tmp_path_factory, clock, settings_vector,
                                            records, query, k, project, min_n) -> None:
    path = tmp_path_factory.mktemp("oracle")
    with velesmem.open(path, clock=clock, settings=settings_vector).memory as mem:
        check_against_oracle(mem, records, query, k, project, min_n)


def test_selector_and_hnsw_paths_match_the_oracle(tmp_path, clock, settings_vector,
                                                  monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 0)
    monkeypatch.setattr(vector_index, "EXACT_FILTER_MAX", 0)
    rng = np.random.default_rng(7)
    records = [(" ".join(rng.choice(WORDS, size=4)) + f" item{i}", "ab"[i % 2], i % 6)
               for i in range(300)]
    with velesmem.open(tmp_path, clock=clock, settings=settings_vector).memory as mem:
        check_against_oracle(mem, records, "cache lock disk", 10, "a", None)
        for text, _, _ in records[:40]:
            mem.forget(fact_id(text))
        got = mem.recall("cache lock disk", k=50).memories
        assert not {m.id for m in got} & {fact_id(t) for t, _, _ in records[:40]}


@pytest.fixture
def settings_vector(settings):
    return settings.with_overrides(recall_mode="vector")


def test_hybrid_filtered_recall_returns_only_and_all_matches(mem: MemoryService) -> None:
    for i in range(60):
        mem.remember(f"note {i} about {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % 10]}",
                     metadata={"project": "ab"[i % 2], "n": i})
    got = mem.recall("note about cache lock", k=50, filter={"project": "a"}).memories
    assert len(got) == 30 and all(m.metadata["project"] == "a" for m in got)
    top = mem.recall_where("note about cache lock", [{"field": "n", "op": "lt", "value": 5}],
                           k=10)
    assert sorted(m.metadata["n"] for m in top.memories) == [0, 1, 2, 3, 4]
    lexical = mem.recall("cache", k=3, filter={"project": "b"}).memories
    assert all("cache" in m.content for m in lexical)


def test_use_after_close_is_internal(store_dir, clock) -> None:
    from velesmem.errors import Internal
    mem = velesmem.open(store_dir, clock=clock).memory
    mem.recall("warm up the reader")
    mem.close()
    with pytest.raises(Internal, match="closed"):
        mem.recall("x")
    with pytest.raises(Internal, match="closed"):
        mem.remember("x")


def test_bm25_keeps_the_rarest_terms_within_the_postings_budget(mem: MemoryService,
                                                                 monkeypatch) -> None:
    from velesmem.store.sqlite import text as ranking

    for i in range(40):
        mem.remember(f"common groups running note {i}")
    mem.remember("rare happiness entry")
    conn = mem.store.reader()
    assert ranking.bounded_terms(conn, ["groups", "happiness", "absent"]) == ["happiness",
                                                                              "groups"]
    monkeypatch.setattr(ranking, "BM25_POSTINGS_BUDGET", 10)
    assert ranking.bounded_terms(conn, ["groups", "happiness"]) == ["happiness"]
    assert ranking.bounded_terms(conn, ["groups"]) == ["groups"]  # the rarest is always kept
    assert mem.recall("happiness groups", k=1).memories[0].content == "rare happiness entry"


def test_recall_returns_up_to_k_and_never_pads_with_facts_without_evidence(
        mem: MemoryService) -> None:
    """A fact that shares no word with the query and is not similar enough (the documented
    floor) is not padded in; one with evidence always outranks one without."""
    mem.remember("the cache layer is slow on cold starts")
    mem.remember("lunch menu for friday: pasta")
    mem.remember("quarterly revenue figures were published")
    got = mem.recall("cache cold starts", k=10).memories
    assert [m.content for m in got] == ["the cache layer is slow on cold starts"]
    assert mem.recall("zebra giraffe", k=10).memories == []
    assert mem.why("zebra giraffe").nodes == []


def test_hybrid_ranks_the_same_on_one_thread_and_on_two(mem: MemoryService, monkeypatch) -> None:
    """Below PARALLEL_SEARCH_MIN_FACTS the text and vector sides run one after the other; above
    it on two threads, the vector side reading its scores early when BM25 is still running.
    Every path gives the same ranking and scores."""
    import threading

    for i in range(120):
        mem.remember(f"service {i % 9} deploy note {i}: cache {i % 7} retries {i % 5} timeout")
    queries = ["cache retries", "deploy timeout note 17", "service 3 cache 4", "zebra"]
    if mem.store.backend == "sqlite":  # PostgreSQL: always two threads (two round trips)
        assert not mem.store.parallel_search
    with monkeypatch.context() as one_thread:
        one_thread.setattr(mem._ranker, "pool", None)
        serial = [mem.recall(q, k=10).to_dict() for q in queries]
    monkeypatch.setattr(limits, "PARALLEL_SEARCH_MIN_FACTS", 0)
    assert mem.store.parallel_search
    assert [mem.recall(q, k=10).to_dict() for q in queries] == serial
    text_search = mem.store.text_search
    vector_done = threading.Event()

    def after_the_vector_side(query, allowed):  # the early-scores path, made certain
        vector_done.wait(5)
        return text_search(query, allowed)

    vector_candidates = mem.store.vector_candidates

    def then_release(*args):
        try:
            return vector_candidates(*args)
        finally:
            vector_done.set()

    monkeypatch.setattr(mem.store, "text_search", after_the_vector_side)
    monkeypatch.setattr(mem.store, "vector_candidates", then_release)
    for q, want in zip(queries, serial):
        vector_done.clear()
        assert mem.recall(q, k=10).to_dict() == want

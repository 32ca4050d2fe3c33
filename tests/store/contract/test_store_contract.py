"""What every storage backend promises the services (velesmem/store/protocol.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import edge_id, fact_id, to_i64, to_u64
from velesmem.store import ENTITY_HUB_KIND, Counts, Edge, Store, StoredFact
from velesmem.store.predicates import TRUE, All, Compare

from .conftest import IDENTITY, NOW, vector, write


def key(text: str) -> int:
    return to_i64(fact_id(text))


def test_remember_resolves_to_the_key_and_reads_back(store: Store) -> None:
    assert store.remember(write("alpha fact", metadata='{"p":"x"}')).result() == key("alpha fact")
    got = store.facts([key("alpha fact")], NOW)
    fact = got[key("alpha fact")]
    assert (fact.content, fact.metadata, fact.kind, fact.confidence) == (
        "alpha fact", {"p": "x"}, None, 0.5)
    assert store.provenance() == IDENTITY
    assert store.serving_space().identity == IDENTITY


def test_same_key_updates_in_place(store: Store) -> None:
    store.remember(write("one text", metadata='{"v":1}')).result()
    store.remember(write("one text", metadata='{"v":2}', now=NOW + 5)).result()
    assert store.counts(NOW + 5).facts == 1
    assert store.facts([key("one text")], NOW + 5)[key("one text")].metadata == {"v": 2}


def test_count_by_counts_live_user_facts_per_string_value_of_a_key(store: Store) -> None:
    store.remember(write("from mem0 one", metadata='{"imported_from":"mem0"}')).result()
    store.remember(write("from mem0 two", metadata='{"imported_from":"mem0"}')).result()
    store.remember(write("from claude", metadata='{"imported_from":"claude-code"}')).result()
    store.remember(write("a number", metadata='{"imported_from":7}')).result()
    store.remember(write("gone soon", metadata='{"imported_from":"mem0"}',
                         expires_at=NOW + 10)).result()
    store.remember(write("no source")).result()
    store.put_internal(to_i64(42), "hub", '{"imported_from":"mem0"}', "hub", NOW).result()
    assert store.count_by("imported_from", NOW) == {"claude-code": 1, "mem0": 3}
    assert store.count_by("imported_from", NOW + 10) == {"claude-code": 1, "mem0": 2}
    assert store.count_by("absent", NOW) == {}


def test_links_need_live_targets_and_a_refused_write_changes_nothing(store: Store) -> None:
    with pytest.raises(NotFound):
        store.remember(write("dangling", links=((to_i64(12345), "r"),))).result()
    assert store.facts([key("dangling")], NOW) == {}
    store.remember(write("target")).result()
    store.remember(write("source", links=((key("target"), "cites"),))).result()
    assert store.out_edges(key("source"), NOW, 10) == [(key("target"), "cites")]
    assert store.in_edges(key("target"), NOW, 10) == [(key("source"), "cites")]


def test_related_keys_names_the_keys_an_edge_of_the_relations_touches_either_way(
        store: Store) -> None:
    texts = ("newer version", "older version", "copy", "original", "archived", "summary",
             "cited", "alone")
    for t in texts:
        store.remember(write(t)).result()
    store.relate(key("newer version"), key("older version"), "supersedes", NOW).result()
    store.relate(key("copy"), key("original"), "duplicate_of", NOW).result()
    store.relate(key("archived"), key("summary"), "consolidated_into", NOW).result()
    store.relate(key("alone"), key("cited"), "cites", NOW).result()
    every = [key(t) for t in texts]
    assert store.related_keys(every, ["supersedes", "duplicate_of"]) == {
        key("newer version"), key("older version"), key("copy"), key("original")}
    assert store.related_keys([*every, to_i64(999)], ["consolidated_into"]) == {
        key("archived"), key("summary")}
    assert store.related_keys([key("alone"), key("cited")], ["supersedes"]) == set()
    assert store.related_keys([], ["supersedes"]) == set()
    assert store.related_keys(every, []) == set()


def test_related_keys_answers_for_more_keys_than_one_statement_binds(store: Store) -> None:
    store.remember(write("first end")).result()
    store.remember(write("last end")).result()
    store.relate(key("first end"), key("last end"), "supersedes", NOW).result()
    many = [key("first end"), *range(1, 10_000), key("last end")]
    assert store.related_keys(many, ["supersedes"]) == {key("first end"), key("last end")}


def test_relate_is_idempotent_and_checks_both_ends(store: Store) -> None:
    for t in ("from end", "to end"):
        store.remember(write(t)).result()
    a, b = key("from end"), key("to end")
    first = store.relate(a, b, "depends_on", NOW).result()
    assert first == to_i64(edge_id(to_u64(a), to_u64(b), "depends_on"))
    assert store.relate(a, b, "depends_on", NOW).result() == first
    assert store.counts(NOW).edges == 1
    with pytest.raises(NotFound):
        store.relate(a, to_i64(999), "x", NOW).result()
    assert store.unrelate(a, b, "depends_on").result() == 1
    assert store.unrelate(a, b, "depends_on").result() == 0
    assert store.targets(a) == []


def test_forget_removes_edges_and_orphan_hubs(store: Store) -> None:
    store.remember(write("fact about sqlite")).result()
    hub = to_i64(77)
    store.put_internal(hub, "Entity: sqlite", "{}", ENTITY_HUB_KIND, NOW).result()
    store.relate(key("fact about sqlite"), hub, "about", NOW).result()
    store.relate(hub, key("fact about sqlite"), "mentions", NOW).result()
    assert store.forget(key("fact about sqlite"), NOW).result() is True
    assert store.forget(key("fact about sqlite"), NOW).result() is False
    assert store.get_internal(hub, NOW) is None  # no live fact mentions it any more
    assert store.counts(NOW) .edges == 0
    assert store.vector_search(vector(1), 5, None) == []


def test_feedback_is_atomic_under_concurrency(store: Store) -> None:
    store.remember(write("reinforced")).result()
    k = key("reinforced")
    threads = [threading.Thread(target=lambda: store.feedback(k, True, NOW).result())
               for _ in range(3)]
    threads += [threading.Thread(target=lambda: store.feedback(k, False, NOW).result())
                for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fact = store.facts([k], NOW)[k]
    assert round(fact.confidence, 6) == round(0.5 + 3 * 0.1 - 2 * 0.05, 6)
    assert (fact.successes, fact.failures) == (3, 2)
    with pytest.raises(NotFound):
        store.feedback(to_i64(4242), True, NOW).result()


def test_concurrent_remembers_of_one_text_converge(store: Store) -> None:
    futures = [store.remember(write("the same decision")) for _ in range(20)]
    assert {f.result() for f in futures} == {key("the same decision")}
    assert store.counts(NOW).facts == 1


def test_ttl_hides_then_purges(store: Store) -> None:
    store.remember(write("short lived", expires_at=NOW + 10)).result()
    store.remember(write("permanent")).result()
    assert store.next_expiry() == NOW + 10
    assert set(store.facts([key("short lived"), key("permanent")], NOW + 9)) == {
        key("short lived"), key("permanent")}
    assert set(store.facts([key("short lived"), key("permanent")], NOW + 10)) == {
        key("permanent")}
    assert store.confidences([key("short lived")], NOW + 11) == {}
    assert store.purge_expired(NOW + 11).result() == 1
    assert store.next_expiry() is None
    assert store.counts(NOW + 11).facts == 1


def test_predicates_are_type_strict(store: Store) -> None:
    store.remember(write("numeric", metadata='{"ts":20230601,"ok":true,"n":1.5}')).result()
    store.remember(write("textual", metadata='{"ts":"20230601","ok":false}')).result()
    store.remember(write("bare", metadata="{}")).result()
    k = lambda *ts: sorted(key(t) for t in ts)  # noqa: E731

    def match(*parts: Compare) -> list[int]:
        return store.matching(All(parts)).tolist()

    assert match(Compare("ts", "number", "=", 20230601)) == k("numeric")
    assert match(Compare("ts", "text", "=", "20230601")) == k("textual")
    assert match(Compare("ts", "number", ">=", 20230101)) == k("numeric")
    assert match(Compare("ts", "number", "!=", 1)) == k("numeric")  # absent never matches
    assert match(Compare("ok", "true")) == k("numeric")
    assert match(Compare("n", "number", "<", 2), Compare("ok", "true")) == k("numeric")
    assert match(Compare("n", "number", ">", 2)) == []
    assert match(Compare("missing", "null")) == []
    with pytest.raises(InvalidInput):
        store.matching(TRUE)


def test_text_search_scores_matching_words_and_respects_allowed(store: Store) -> None:
    store.remember(write("the cache layer broke")).result()
    store.remember(write("a caching strategy for the disk")).result()
    store.remember(write("unrelated network note")).result()
    ids, scores = store.text_search("cache", None)
    assert set(ids.tolist()) >= {key("the cache layer broke")}
    assert key("unrelated network note") not in ids.tolist()
    assert np.all(scores > 0) and list(ids) == sorted(ids)
    allowed = np.asarray(sorted([key("unrelated network note")]), dtype=np.int64)
    ids, _ = store.text_search("cache", allowed)
    assert ids.tolist() == []
    assert store.text_search("the of and", None)[0].tolist() == []  # stopwords only


def test_vector_search_candidates_and_scores(store: Store) -> None:
    for n in range(20):
        store.remember(write(f"vector fact {n}", seed=n)).result()
    top = store.vector_search(vector(7), 3, None)
    assert top[0][0] == key("vector fact 7") and abs(top[0][1] - 1.0) < 1e-5
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)
    allowed = np.asarray(sorted([key("vector fact 3"), key("vector fact 4")]), dtype=np.int64)
    assert {i for i, _ in store.vector_search(vector(7), 5, allowed)} == set(allowed.tolist())
    assert set(store.vector_candidates(vector(7), 3, None).tolist()) >= {i for i, _ in top}
    scored = store.scored(vector(7), [key("vector fact 7"), key("vector fact 3"), to_i64(1)], NOW)
    assert set(scored) == {key("vector fact 7"), key("vector fact 3")}  # 1: no such fact
    assert abs(scored[key("vector fact 7")][0] - 1) < 1e-5 and scored[key("vector fact 7")][1] > 0
    assert abs(scored[key("vector fact 3")][0] - float(vector(3) @ vector(7))) < 1e-5


def test_vector_top_is_the_best_live_candidates_by_exact_score(store: Store) -> None:
    for n in range(20):
        store.remember(write(f"vector fact {n}", seed=n)).result()
    # a fact nearest the query that expires: found by the index, gone from the results after
    store.remember(write("expiring twin", seed=7, expires_at=NOW + 10)).result()
    query = vector(7)

    def expected(n: int, now: float) -> list[tuple[int, float, float]]:
        candidates = store.vector_candidates(query, n, None)
        scored = store.scored(query, candidates.tolist(), now)
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))[:n]
        return [(k, s, c) for k, (s, c) in ranked]

    for now in (NOW, NOW + 11):
        top = store.vector_top(query, 4, None, now)
        assert [k for k, _, _ in top] == [k for k, _, _ in expected(4, now)]
        assert all(abs(s - e) < 1e-6 and c == ce
                   for (_, s, c), (_, e, ce) in zip(top, expected(4, now)))
    assert key("expiring twin") in [k for k, _, _ in store.vector_top(query, 4, None, NOW)]
    gone = store.vector_top(query, 4, None, NOW + 11)
    assert key("expiring twin") not in [k for k, _, _ in gone]
    assert gone[0][0] == key("vector fact 7")
    allowed = np.asarray(sorted([key("vector fact 3"), key("vector fact 4")]), dtype=np.int64)
    assert {k for k, _, _ in store.vector_top(query, 5, allowed, NOW)} == set(allowed.tolist())


def test_internal_facts_are_apart_and_expire(store: Store) -> None:
    store.remember(write("user visible")).result()
    store.put_internal(to_i64(5), "a source", '{"kind_of":"src","n":3}', "ctx_source", NOW,
                       NOW + 100).result()
    store.put_internal(to_i64(6), "an event", '{"n":4}', "ctx_source", NOW + 1).result()
    assert store.counts(NOW).facts == 1
    assert store.facts([to_i64(5)], NOW) == {}
    assert store.facts([to_i64(5)], NOW, user_only=False)[to_i64(5)].kind == "ctx_source"
    newest = store.scan_internal("ctx_source", TRUE, 10, NOW + 2)
    assert [f.key for f in newest] == [to_i64(6), to_i64(5)]
    only = store.scan_internal("ctx_source", All((Compare("n", "number", "=", 3),)), 10, NOW)
    assert [f.key for f in only] == [to_i64(5)]
    assert store.get_internal(to_i64(5), NOW + 100) is None  # expired
    with pytest.raises(InvalidInput):
        store.put_internal(key("user visible"), "x", "{}", "ctx_source", NOW).result()
    assert store.delete_internal(to_i64(6)).result() is True
    assert store.delete_internal(to_i64(6)).result() is False


def test_page_walks_u64_order_across_the_sign_boundary(store: Store) -> None:
    texts = [f"paged fact {n}" for n in range(40)]
    for t in texts:
        store.remember(write(t)).result()
    want = sorted(to_u64(key(t)) for t in texts)
    got: list[int] = []
    after = None
    while True:
        page = store.page(after, 7, TRUE, include_internal=False, now=NOW)
        if not page:
            break
        got += [to_u64(f.key) for f in page]
        after = got[-1]
    assert got == want
    assert any(u >= 1 << 63 for u in want) and any(u < 1 << 63 for u in want)


def test_export_is_one_snapshot_of_facts_then_edges(store: Store) -> None:
    store.remember(write("exported a")).result()
    store.remember(write("exported b", links=((key("exported a"), "r"),))).result()
    items = list(store.export(NOW, include_internal=False))
    facts = [i for i in items if isinstance(i, StoredFact)]
    edges = [i for i in items if isinstance(i, Edge)]
    assert items == facts + edges
    assert [to_u64(f.key) for f in facts] == sorted(to_u64(f.key) for f in facts)
    assert [(e.src, e.dst, e.relation) for e in edges] == [
        (key("exported b"), key("exported a"), "r")]


def test_everything_acknowledged_survives_a_reopen(open_backend: Callable[[], Store]) -> None:
    first = open_backend()
    first.remember(write("durable one", seed=1)).result()
    first.remember(write("durable two", seed=2, links=((key("durable one"), "r"),))).result()
    first.forget(key("durable one"), NOW).result()
    first.remember(write("durable three", seed=3)).result()
    first.close()
    again = open_backend()
    assert set(again.facts([key(t) for t in ("durable one", "durable two", "durable three")],
                           NOW)) == {key("durable two"), key("durable three")}
    assert {i for i, _ in again.vector_search(vector(1), 5, None)} == {
        key("durable two"), key("durable three")}
    assert again.counts(NOW).edges == 0
    assert again.verify() == []


def test_restore_sets_the_learned_state_and_times_as_exported(store: Store) -> None:
    store.remember(write("restored fact")).result()
    k = key("restored fact")
    assert store.restore(k, 0.85, 4, 1, NOW - 500, NOW - 100, NOW + 900).result() is True
    fact = store.facts([k], NOW)[k]
    assert (fact.confidence, fact.successes, fact.failures, fact.created_at, fact.updated_at,
            fact.expires_at) == (0.85, 4, 1, NOW - 500, NOW - 100, NOW + 900)
    assert store.next_expiry() == NOW + 900
    assert store.restore(to_i64(31337), 0.5, 0, 0, NOW, NOW, None).result() is False


def test_restore_all_writes_an_import_in_one_transaction_or_nothing(store: Store) -> None:
    from velesmem.store.protocol import RestoredFact, RestoreWrite

    store.remember(write("stored before")).result()
    user = RestoredFact(key("imported fact"), "imported fact", '{"_veles_author":"alice"}',
                        None, vector(7), 0.75, 2, 1, NOW - 50, NOW - 10, NOW + 600)
    hub = RestoredFact(to_i64(4242), "Entity: imports", '{"_veles_entity":"imports"}',
                       ENTITY_HUB_KIND, None, 0.5, 0, 0, NOW - 50, NOW - 50, None)
    edges = ((user.key, hub.key, "mentions"), (user.key, key("stored before"), "follows"))
    with pytest.raises(NotFound):
        store.restore_all(RestoreWrite(NOW, (user, hub),
                                       (*edges, (user.key, to_i64(999), "dangles")))).result()
    assert store.facts([user.key, hub.key], NOW, user_only=False) == {}
    assert store.counts(NOW) == Counts(1, 0)
    assert store.restore_all(RestoreWrite(NOW, (user, hub), edges)).result() == 4
    got = store.facts([user.key, hub.key], NOW, user_only=False)
    assert (got[user.key].metadata, got[user.key].confidence, got[user.key].successes,
            got[user.key].created_at, got[user.key].updated_at, got[user.key].expires_at) == (
        {"_veles_author": "alice"}, 0.75, 2, NOW - 50, NOW - 10, NOW + 600)
    assert got[hub.key].kind == ENTITY_HUB_KIND
    assert sorted(store.out_edges(user.key, NOW, 10)) == sorted(
        (dst, rel) for _, dst, rel in edges)
    assert store.vector_search(vector(7), 1, None)[0][0] == user.key
    clash = RestoredFact(hub.key, "a user fact on the hub's key", "{}", None, vector(8), 0.5,
                         0, 0, NOW, NOW, None)
    late = RestoredFact(key("late fact"), "late fact", "{}", None, vector(9), 0.5, 0, 0, NOW,
                        NOW, None)
    with pytest.raises(InvalidInput):
        store.restore_all(RestoreWrite(NOW, (late, clash))).result()
    assert store.facts([key("late fact")], NOW) == {}


def test_a_fact_stored_before_its_vector_is_found_filled_once_and_kept(
        open_backend: Callable[[], Store]) -> None:
    """A write never waits for the model: a fact stored without a vector is durable and
    searchable by text, listed by ``unembedded``, and ``fill_vectors`` gives it exactly one."""
    from velesmem.store import FactWrite

    store = open_backend()
    late = key("written while the model loads")
    store.remember(FactWrite(late, "written while the model loads", "{}", None, NOW,
                             None)).result()
    assert store.provenance() is None  # no vector yet: nothing has filled the store
    store.remember(write("embedded at once", seed=3)).result()
    assert set(store.facts([late], NOW)) == {late}
    assert late in store.text_search("model loads", None)[0].tolist()
    assert store.unembedded(None, 10, NOW) == [(late, "written while the model loads")]
    assert [i for i, _ in store.vector_search(vector(5), 5, None)] == [key("embedded at once")]
    space = store.serving_space().id
    assert store.fill_vectors(space + 1, [(late, vector(5))]).result() == 0  # not the serving one
    assert store.fill_vectors(space, [(late, vector(5)), (key("embedded at once"), vector(9)),
                                      (key("never stored"), vector(7))]).result() == 1
    assert store.unembedded(None, 10, NOW) == []
    assert store.vector_search(vector(5), 1, None)[0][0] == late
    assert store.vector_search(vector(3), 1, None)[0][0] == key("embedded at once")  # unchanged
    assert store.provenance() == IDENTITY
    assert store.unembedded(late, 10, NOW) == []  # the cursor: keys above ``after`` only
    store.close()
    again = open_backend()
    assert again.vector_search(vector(5), 1, None)[0][0] == late
    assert again.verify() == []

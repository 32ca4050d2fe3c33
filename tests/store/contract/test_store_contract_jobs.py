"""What every backend promises beyond facts: atomic graph writes, durable jobs, a second
embedding space for an online migration, and the journal of writes made meanwhile."""

from __future__ import annotations

import numpy as np
import pytest

from velesmem.errors import Internal, InvalidInput, NotFound
from velesmem.ids import entity_hub_id, to_i64
from velesmem.store import (
    ENTITY_HUB_KIND,
    HUB_NAME_KEY,
    HUB_SOURCE_KEY,
    GraphWrite,
    HubWrite,
    Identity,
    Job,
    Store,
)

from .conftest import DIM, IDENTITY, NOW, vector, write
from .test_store_contract import key


def job(n: int, kind: str = "extraction", state: str = "accepted") -> Job:
    return Job(f"job-{n}", kind, state, f"fp-{n}", NOW + n, NOW + n, payload={"n": n})


def test_write_graph_is_one_transaction_with_its_job(store: Store) -> None:
    store.create_job(job(1), max_pending=10).result()
    claimed = store.claim_job("extraction", NOW).result()
    assert claimed is not None and claimed.state == "running"
    hub = to_i64(entity_hub_id("postgres"))
    graph = GraphWrite(NOW, facts=(write("graph fact one"), write("graph fact two")),
                       hubs=(HubWrite(hub, "postgres", attributes=(("lang", "sql"),)),),
                       edges=((key("graph fact one"), hub, "about"),
                              (key("graph fact two"), to_i64(99), "dangling")))
    keys = store.write_graph(graph, job="job-1", result={"ids": 2}).result()
    assert keys == [key("graph fact one"), key("graph fact two")]
    assert store.out_edges(key("graph fact one"), NOW, 10) == [(hub, "about")]
    assert store.out_edges(key("graph fact two"), NOW, 10) == []  # the missing end: skipped
    stored = store.get_internal(hub, NOW)
    assert stored is not None and stored.kind == ENTITY_HUB_KIND
    assert stored.content == "Entity: postgres"
    assert stored.metadata == {HUB_NAME_KEY: "postgres", HUB_SOURCE_KEY: "entity", "lang": "sql"}
    done = store.get_job("job-1")
    assert (done.state, done.result, done.payload, done.output) == (
        "committed", {"ids": 2}, None, None)
    store.write_graph(GraphWrite(NOW + 1, hubs=(HubWrite(hub, "postgres", attributes=(
        ("lang", "plpgsql"), ("year", 1996))),))).result()
    assert store.get_internal(hub, NOW).metadata == {
        HUB_NAME_KEY: "postgres", HUB_SOURCE_KEY: "entity", "lang": "plpgsql", "year": 1996}


def test_a_hub_colliding_with_a_user_fact_is_left_out(store: Store) -> None:
    store.remember(write("a user fact")).result()
    store.remember(write("another user fact")).result()
    clash = key("a user fact")
    store.write_graph(GraphWrite(NOW, hubs=(HubWrite(clash, "clash"),),
                                 edges=((key("another user fact"), clash, "about"),))).result()
    assert store.facts([clash], NOW)[clash].kind is None
    assert store.out_edges(key("another user fact"), NOW, 10) == []


def test_jobs_are_created_once_claimed_in_order_and_end_terminal(store: Store) -> None:
    for n in (2, 1, 3):
        assert store.create_job(job(n), max_pending=3).result()[1] is True
    assert store.create_job(job(1), max_pending=3).result() == (store.get_job("job-1"), False)
    with pytest.raises(InvalidInput):
        store.create_job(job(4), max_pending=3).result()
    assert store.create_job(job(5, kind="other"), max_pending=3).result()[1] is True
    first = store.claim_job("extraction", NOW + 10).result()
    assert (first.id, first.state) == ("job-1", "running")
    assert [j.id for j in store.pending_jobs("extraction", 10)] == ["job-1", "job-2", "job-3"]
    partial = store.update_job("job-1", NOW + 11, output="extracted text").result()
    assert (partial.state, partial.output, partial.payload) == ("running", "extracted text",
                                                                {"n": 1})
    end = store.update_job("job-1", NOW + 12, state="failed", error="boom").result()
    assert (end.state, end.error, end.output, end.payload) == ("failed", "boom", None, None)
    assert [j.id for j in store.pending_jobs("extraction", 10)] == ["job-2", "job-3"]
    assert store.claim_job("extraction", NOW).result().id == "job-2"
    assert store.claim_job("extraction", NOW).result().id == "job-3"
    assert store.claim_job("extraction", NOW).result() is None
    with pytest.raises(NotFound):
        store.update_job("job-404", NOW, state="failed").result()
    assert store.get_job("job-404") is None


def test_recent_jobs_lists_every_state_of_one_kind_newest_first(store: Store) -> None:
    for n in (1, 3, 2):
        store.create_job(job(n), max_pending=10).result()
    store.create_job(job(4, kind="other"), max_pending=10).result()
    store.update_job("job-1", NOW + 20, state="committed", result={"done": True}).result()
    recent = store.recent_jobs("extraction", 10)
    assert [(j.id, j.state) for j in recent] == [
        ("job-3", "accepted"), ("job-2", "accepted"), ("job-1", "committed")]
    assert recent[2].result == {"done": True}
    assert [j.id for j in store.recent_jobs("extraction", 2)] == ["job-3", "job-2"]
    assert store.recent_jobs("nothing", 10) == []


def test_a_second_space_is_built_then_serves(store: Store) -> None:
    texts = [f"space fact {n}" for n in range(12)]
    for n, t in enumerate(texts):
        store.remember(write(t, seed=n)).result()
    old = store.serving_space()
    other = Identity("migration-target", DIM)
    space = store.create_space(other, (0.5,) * DIM, NOW).result()
    assert store.building_space() == space and space.identity == other
    with pytest.raises(InvalidInput):
        store.create_space(other, (), NOW).result()
    assert isinstance(store.space_destination(space.id), str)
    batches, after = [], None
    while page := store.facts_after(after, 5, NOW):
        batches.append(page)
        after = page[-1][0]
    copied = [k for page in batches for k, _ in page]
    assert copied == sorted(key(t) for t in texts) and [len(b) for b in batches] == [5, 5, 2]
    shifted = {k: vector(1000 + n) for n, k in enumerate(copied)}
    assert store.put_vectors(space.id, [(to_i64(777), vector(1)),
                                        *list(shifted.items())[:-1]]).result() == len(copied) - 1
    assert store.space_count(space.id) == len(copied) - 1
    with pytest.raises(Internal):  # a fact has no vector in the new space yet
        store.activate_space(space.id, (0.5,) * DIM).result()
    last = copied[-1]
    store.put_vectors(space.id, [(last, shifted[last])]).result()
    assert store.delete_vectors(space.id, [last]).result() == 1
    store.put_vectors(space.id, [(last, shifted[last])]).result()
    store.load_building_index()
    store.activate_space(space.id, (0.5,) * DIM).result()
    assert store.serving_space().id == space.id and store.serving_space().identity == other
    assert store.provenance() == other and store.migrated_from() == IDENTITY.model
    assert store.building_space() is None
    some = copied[3]
    assert store.vector_search(shifted[some], 1, None)[0][0] == some  # the new vectors serve
    with pytest.raises(InvalidInput):
        store.drop_space(space.id).result()
    store.drop_space(old.id).result()
    assert store.space_count(old.id) == 0


def test_the_journal_tracks_vector_changes_and_refuses_when_full(store: Store) -> None:
    store.remember(write("before the journal")).result()
    store.start_journal("epoch-1", max_bytes=3 * 24).result()
    store.remember(write("journaled fact")).result()  # a new vector: journaled
    store.remember(write("journaled fact", metadata='{"v":2}')).result()  # same vector: not
    store.feedback(key("journaled fact"), True, NOW).result()  # not a vector change
    store.put_internal(to_i64(5), "scaffold", "{}", "ctx_source", NOW).result()  # not a user fact
    store.forget(key("before the journal"), NOW).result()  # a vector to drop: journaled
    entries, state = store.journal(10)
    assert [k for _, k in entries] == [key("journaled fact"), key("before the journal")]
    assert (state.epoch, state.entries, state.bytes, state.dirty_facts) == ("epoch-1", 2, 48, 2)
    store.remember(write("third entry")).result()
    with pytest.raises(InvalidInput, match="journal"):
        store.remember(write("over the cap")).result()
    assert store.facts([key("over the cap")], NOW) == {}  # refused: nothing written
    store.ack_journal(entries[1][0]).result()
    entries, state = store.journal(10)
    assert [k for _, k in entries] == [key("third entry")] and state.bytes == 24
    store.remember(write("room again")).result()
    store.stop_journal().result()
    entries, state = store.journal(10)
    assert entries == [] and (state.epoch, state.entries) == (None, 0)
    store.remember(write("no journal now")).result()
    assert store.journal(10)[1].entries == 0
    assert np.isfinite(store.vector_search(vector(3), 1, None)[0][1])

"""Updates win: a newer fact that changes an older one is linked ``supersedes`` and ranked first;
the older version stays stored, marked ``superseded_by``, and in ``why`` and ``history``."""

from __future__ import annotations

import pytest

from velesmem.errors import InvalidInput
from velesmem.memory import MemoryService
from velesmem.memory.supersede import changes, statement
from tests.support.clock import Clock


def _supersedes(mem: MemoryService) -> int:
    """How many supersedes edges the store holds (the autograph's hub edges, which land in the
    background for "the API rate limiter", are not counted)."""
    return sum(1 for e in mem.store.export(mem.now(), include_internal=False)
               if getattr(e, "relation", None) == "supersedes")

OLD = "The API rate limiter allows 600 requests per minute per key."
NEW = "Since December the API rate limiter allows 900 requests per minute per key."
QUESTION = "How many requests per minute does the API rate limiter allow per key?"
DAY = 86_400.0


@pytest.mark.parametrize(("new", "old"), [
    (NEW, OLD),
    ("The mobile app release has moved to April 2.", "The mobile app release is scheduled for March 14."),
    ("The on-call rotation for payments is now owned by Maria Lopez.",
     "The on-call rotation for payments is owned by Kenji Sato."),
    ("The public API no longer supports offset pagination.", "The public API supports offset pagination."),
    ("The chat service doesn't support file uploads.", "The chat service supports file uploads."),
])
def test_a_changed_value_of_the_same_subject_is_an_update(new: str, old: str) -> None:
    assert changes(new, old)


@pytest.mark.parametrize(("new", "old"), [
    ("The rate limiter allows 600 requests each minute per key.", OLD),  # same value: a paraphrase
    ("The search index has 12 shards.", OLD),  # another subject
    ("link number 1 of the long chain", "link number 0 of the long chain"),  # labels, not values
    ("Ticket #13 is assigned to the platform team.", "Ticket #12 is assigned to the platform team."),
    ("limit 900", "limit 600"),  # too few subject words to tell
])
def test_same_value_other_subject_or_numbered_labels_are_not_updates(new: str, old: str) -> None:
    assert not changes(new, old)


def test_statement_sets_values_apart_from_the_subject() -> None:
    s = statement(NEW)
    assert {"900", "december"} <= s.values
    assert {"rate", "limiter", "request", "minute"} <= s.subject
    assert "900" not in s.subject


def test_newer_version_is_linked_supersedes_and_recalled_first(mem: MemoryService,
                                                               clock: Clock) -> None:
    old = mem.remember(OLD)
    clock.advance(30 * DAY)
    new = mem.remember(NEW)
    first, second = mem.recall(QUESTION, k=5).memories[:2]
    assert first.id == new.id and first.superseded_by is None
    assert second.id == old.id and second.superseded_by == new.id
    wire = second.to_dict()
    assert wire["superseded_by"] == new.id and wire["superseded_by_str"] == str(new.id)
    assert "superseded_by" not in first.to_dict()
    where = mem.recall_where(QUESTION, []).memories
    assert [m.id for m in where[:2]] == [new.id, old.id]


def test_the_older_version_is_never_dropped(mem: MemoryService, clock: Clock) -> None:
    old = mem.remember(OLD)
    clock.advance(DAY)
    mem.remember(NEW)
    listed = {m.id for m in mem.list_memories().memories}
    assert old.id in listed
    assert mem.memory_status().memory["facts"] == 2 and _supersedes(mem) == 1


def test_why_walks_the_chain_from_the_newest(mem: MemoryService, clock: Clock) -> None:
    v1 = mem.remember(OLD)
    clock.advance(DAY)
    v2 = mem.remember("From March the API rate limiter allows 750 requests per minute per key.")
    clock.advance(DAY)
    v3 = mem.remember(NEW)
    why = mem.why(OLD, max_hops=3)
    assert why.nodes[0].id == v3.id
    chain = [(e.from_, e.to, e.relation) for e in why.edges if e.relation == "supersedes"]
    assert chain == [(v3.id, v2.id, "supersedes"), (v2.id, v1.id, "supersedes")]


def test_history_lists_every_version_newest_first(mem: MemoryService, clock: Clock) -> None:
    v1 = mem.remember(OLD)
    clock.advance(DAY)
    v2 = mem.remember("From March the API rate limiter allows 750 requests per minute per key.")
    clock.advance(DAY)
    v3 = mem.remember(NEW)
    got = mem.recall(QUESTION, k=1, history=True).memories
    assert [m.id for m in got] == [v3.id, v2.id, v1.id]
    assert [m.superseded_by for m in got] == [None, v3.id, v2.id]
    assert [m.id for m in mem.recall(QUESTION, k=1).memories] == [v3.id]
    with pytest.raises(InvalidInput):
        mem.recall(QUESTION, history="yes")  # type: ignore[arg-type]


def test_an_explicit_supersedes_edge_ranks_the_same(mem: MemoryService, clock: Clock) -> None:
    old = mem.remember("Deploys go through the Jenkins pipeline.")
    clock.advance(DAY)
    new = mem.remember("Deploys are shipped by GitHub Actions workflows.")
    assert _supersedes(mem) == 0  # too different to be detected
    mem.relate(new.id, old.id, "supersedes")
    got = mem.recall("Jenkins pipeline deploys", k=5).memories
    assert got[0].id == new.id
    assert got[1].id == old.id and got[1].superseded_by == new.id


def test_other_scopes_are_not_superseded(mem: MemoryService, clock: Clock) -> None:
    mem.remember(OLD, metadata={"project": "alpha"})
    clock.advance(DAY)
    mem.remember(NEW, metadata={"project": "beta"})
    assert _supersedes(mem) == 0
    mem.remember("Since May the API rate limiter allows 1200 requests per minute per key.",
                 metadata={"project": "alpha"})
    assert _supersedes(mem) == 1


def test_a_filter_keeps_versions_outside_it_out(mem: MemoryService, clock: Clock) -> None:
    old = mem.remember("Deploys go through the Jenkins pipeline.", metadata={"team": "a"})
    clock.advance(DAY)
    new = mem.remember("Deploys are shipped by GitHub Actions workflows.", metadata={"team": "b"})
    mem.relate(new.id, old.id, "supersedes")
    got = mem.recall("Jenkins pipeline deploys", k=5, filter={"team": "a"}).memories
    assert [m.id for m in got] == [old.id] and got[0].superseded_by is None
    assert [m.id for m in mem.recall("Jenkins pipeline deploys", k=5).memories][:2] == [new.id,
                                                                                      old.id]


def test_a_forgotten_version_leaves_the_chain(mem: MemoryService, clock: Clock) -> None:
    old = mem.remember(OLD)
    clock.advance(DAY)
    new = mem.remember(NEW)
    mem.forget(new.id)
    got = mem.recall(QUESTION, k=5).memories
    assert got[0].id == old.id and got[0].superseded_by is None


def test_the_cheap_prefilter_never_drops_a_detected_update() -> None:
    """``may_change`` is a necessary condition of ``changes``: over every pair of the committed
    update triples (old/new, in both orders, and across triples) no change it rejects is one."""
    import json
    from pathlib import Path

    from velesmem.memory.supersede import may_change

    path = Path(__file__).resolve().parents[2] / "bench" / "data" / "updates.jsonl"
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            texts += [row["old"], row["new"]]
    checked = 0
    for a in texts:
        mine = statement(a)
        for b in texts:
            if changes(a, b):
                checked += 1
                assert may_change(mine, b), (a, b)
    assert checked >= 100

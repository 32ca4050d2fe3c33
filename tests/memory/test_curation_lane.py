"""The curation lane: duplicate and supersede checks run after the acknowledgement, in write
order, from a durable cursor (SQLite), so a fact committed before a crash is still checked."""

from __future__ import annotations

from pathlib import Path

import pytest

import velesmem
from velesmem import limits
from velesmem.config import Settings
from velesmem.ids import to_i64, to_u64
from velesmem.memory import duplicates as dup
from velesmem.memory.supersede import SUPERSEDES
from tests.support.clock import Clock

pytestmark = pytest.mark.sqlite_only

RULE = "The public API is limited to 600 requests per minute per key."
PARAPHRASE = "Rate limit for the public API: 600 requests per minute for each key."
OLD = "The API rate limiter allows 600 requests per minute per key."
NEW = "Since December the API rate limiter allows 900 requests per minute per key."
DAY = 86_400.0


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.with_overrides(dedup=True)


def _out(rt: velesmem.Runtime, key: int, relation: str) -> list[int]:
    return [to_u64(d) for d, r in rt.store.out_edges(to_i64(key), rt.memory.now(), 10)
            if r == relation]


def test_facts_committed_before_the_lane_ran_are_checked_at_the_next_start(
        store_dir: Path, clock: Clock, settings: Settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.curator is not None
        rt.curator.stop()  # as if the process died before its lane got to the writes
        first = rt.memory.submit_remember(RULE).result().id
        second = rt.memory.submit_remember(PARAPHRASE).result().id
        old = rt.memory.submit_remember(OLD, metadata={"project": "x"}).result().id
        clock.advance(DAY)
        new = rt.memory.submit_remember(NEW, metadata={"project": "x"}).result().id
        assert rt.memory.memory_status().memory["uncurated"] == 4
        assert _out(rt, second, dup.RELATION) == [] and _out(rt, new, SUPERSEDES) == []
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.memory.settle(60)
        assert _out(rt, second, dup.RELATION) == [first]
        assert _out(rt, first, dup.RELATION) == []  # never linked to a fact written after it
        assert _out(rt, new, SUPERSEDES) == [old]
        assert _out(rt, old, SUPERSEDES) == []
        assert "uncurated" not in rt.memory.memory_status().memory


def test_remember_returns_once_its_fact_is_checked(store_dir: Path, clock: Clock,
                                                   settings: Settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        first = rt.memory.remember(RULE).id
        second = rt.memory.remember(PARAPHRASE).id
        assert _out(rt, second, dup.RELATION) == [first]


def test_acknowledged_writes_are_linked_once_the_lane_settles(store_dir: Path, clock: Clock,
                                                             settings: Settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        fillers = [rt.memory.submit_remember(f"Filler note {i} about topic {i % 7}.")
                   for i in range(200)]
        first = rt.memory.submit_remember(RULE).result().id
        second = rt.memory.submit_remember(PARAPHRASE).result().id
        assert all(f.result().id for f in fillers)
        assert rt.memory.settle(60)
        assert _out(rt, second, dup.RELATION) == [first]
        assert rt.curator is not None and rt.curator.backlog() == 0


def test_a_fact_is_never_linked_to_one_committed_after_its_batch(
        store_dir: Path, clock: Clock, settings: Settings) -> None:
    """The fact after a batch's last one is already in the index when the lane searches, with
    the same created_at (the clock did not move): it is written later, so it is no original of
    the batch's facts (the lane once linked RULE to PARAPHRASE, and PARAPHRASE to itself)."""
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.curator is not None
        rt.curator.stop()  # at the next start RULE ends the first batch, PARAPHRASE is past it
        for i in range(limits.CURATE_BATCH - 1):
            rt.memory.submit_remember(f"Filler note {i} about topic {i % 7}.").result()
        first = rt.memory.submit_remember(RULE).result().id
        second = rt.memory.submit_remember(PARAPHRASE).result().id
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.memory.settle(60)
        assert _out(rt, first, dup.RELATION) == []
        assert _out(rt, second, dup.RELATION) == [first]


def test_a_fact_crowded_by_later_facts_of_its_batch_still_finds_the_older_version(
        store_dir: Path, clock: Clock, settings: Settings) -> None:
    """The batch's searches run together: where facts written after one in the same batch fill
    its nearest, its search is widened, and the older version it changes is still found."""
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.curator is not None
        rt.curator.stop()  # everything below is checked in one batch at the next start
        old = rt.memory.submit_remember(OLD, metadata={"project": "x"}).result().id
        clock.advance(DAY)
        new = rt.memory.submit_remember(NEW, metadata={"project": "x"}).result().id
        for i in range(12):  # closer to NEW than OLD is, and written after it
            clock.advance(1)
            rt.memory.submit_remember(f"{NEW} Noted in review {i}.",
                                      metadata={"project": "x"}).result()
        near = [k for k, _ in rt.store.vector_search(rt.memory.embedder.embed([NEW])[0], 10, None)]
        assert to_i64(old) not in near[:9]  # the first pass alone would miss it
    with velesmem.open(store_dir, clock=clock, settings=settings) as rt:
        assert rt.memory.settle(60)
        assert _out(rt, new, SUPERSEDES) == [old]

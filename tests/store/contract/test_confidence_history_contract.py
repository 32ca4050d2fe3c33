"""Every backend records each change of a user fact's confidence in the change's own
transaction, keeps the newest ``MAX_CONFIDENCE_EVENTS`` per fact, and forgets them with it."""

from __future__ import annotations

import pytest

from velesmem import limits
from velesmem.errors import NotFound
from velesmem.ids import fact_id, to_i64
from velesmem.store import GraphWrite, Store
from velesmem.store.types import (
    CAUSE_DECAY,
    CAUSE_DECAY_UNDONE,
    CAUSE_HELPFUL,
    CAUSE_NOT_HELPFUL,
    ConfidenceEvent,
)

from .conftest import NOW, write


def key(text: str) -> int:
    return to_i64(fact_id(text))


def _rounded(events: list[ConfidenceEvent]) -> list[tuple[float, float, str]]:
    return [(e.at, round(e.confidence, 6), e.cause) for e in events]


def test_feedback_twice_records_two_events_newest_first_with_their_cause(store: Store) -> None:
    store.remember(write("rated fact")).result()
    store.remember(write("other fact")).result()
    k = key("rated fact")
    assert store.confidence_history(k, 10) == []
    store.feedback(k, True, NOW + 1).result()
    store.feedback(k, False, NOW + 2).result()
    assert _rounded(store.confidence_history(k, 10)) == [
        (NOW + 2, 0.55, CAUSE_NOT_HELPFUL), (NOW + 1, 0.6, CAUSE_HELPFUL)]
    assert _rounded(store.confidence_history(k, 1)) == [(NOW + 2, 0.55, CAUSE_NOT_HELPFUL)]
    assert store.confidence_history(key("other fact"), 10) == []


def test_refused_feedback_records_nothing(store: Store) -> None:
    missing = to_i64(4242)
    with pytest.raises(NotFound):
        store.feedback(missing, True, NOW).result()
    assert store.confidence_history(missing, 10) == []


def test_forget_deletes_the_confidence_history_with_the_fact(store: Store) -> None:
    store.remember(write("short lived")).result()
    k = key("short lived")
    store.feedback(k, True, NOW).result()
    assert len(store.confidence_history(k, 10)) == 1
    assert store.forget(k, NOW).result() is True
    assert store.confidence_history(k, 10) == []
    store.remember(write("short lived", now=NOW + 1)).result()  # the same id again: no history
    assert store.confidence_history(k, 10) == []


def test_history_keeps_only_the_newest_events_per_fact(store: Store) -> None:
    store.remember(write("much rated")).result()
    store.remember(write("rated once")).result()
    k = key("much rated")
    store.feedback(key("rated once"), True, NOW).result()
    total = limits.MAX_CONFIDENCE_EVENTS + 5
    for i in range(total):
        store.feedback(k, i % 2 == 0, NOW + i).result()
    kept = store.confidence_history(k, 10 * total)
    assert len(kept) == limits.MAX_CONFIDENCE_EVENTS
    assert [e.at for e in kept] == [NOW + i for i in reversed(range(5, total))]
    assert len(store.confidence_history(key("rated once"), 10)) == 1  # other facts untouched


def test_graph_write_records_each_moved_confidence_with_its_cause(store: Store) -> None:
    store.remember(write("decayed fact")).result()
    k = key("decayed fact")
    hub = to_i64(77)
    store.put_internal(hub, "Entity: x", "{}", "entity_hub", NOW).result()
    store.write_graph(GraphWrite(now=NOW + 1, confidence_deltas=((k, -0.2), (hub, -0.2)),
                                 confidence_cause=CAUSE_DECAY)).result()
    store.write_graph(GraphWrite(now=NOW + 2, confidence_deltas=((k, 0.2),),
                                 confidence_cause=CAUSE_DECAY_UNDONE)).result()
    assert _rounded(store.confidence_history(k, 10)) == [
        (NOW + 2, 0.5, CAUSE_DECAY_UNDONE), (NOW + 1, 0.3, CAUSE_DECAY)]
    assert store.confidence_history(hub, 10) == []  # scaffolding has no confidence to record

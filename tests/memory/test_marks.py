"""Recall asks the store once which results touch a supersedes, duplicate_of or
consolidated_into edge: only those walk their edges, and every answer stays what walking each
result's edges gave (a store answering "every key is linked" is that baseline)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import velesmem
from tests.support.clock import Clock
from velesmem.ids import to_i64
from velesmem.memory import MemoryService
from velesmem.memory.marks import Marks

DAY = 86_400.0
QUERY = "rate limiter requests per minute per key"
CURATING = ("supersedes", "duplicate_of", "consolidated_into")
PLAIN = (
    "Requests over the limit get HTTP 429 with a Retry-After header",
    "Each API key belongs to exactly one tenant account",
    "The gateway logs every rejected request with its key hash",
    "Burst capacity refills smoothly instead of resetting each minute",
    "Internal batch jobs bypass the limiter through a signed header",
    "Key rotation happens quarterly and old keys stay valid for a week",
    "Load tests run against staging every Thursday night",
    "Counters live in Redis with a two minute expiry",
    "Mobile clients back off exponentially after a refusal",
    "The dashboard graphs rejected requests per tenant",
    "Webhooks are delivered at most five times per minute per endpoint",
    "Partners may ask support for a temporary quota raise",
    "A minute window is measured in UTC by the gateway clock",
    "The limiter library is maintained by the platform team",
    "Per-key metrics are sampled at ten percent in production",
    "GraphQL queries cost points by depth rather than by request",
    "Free plans share one pool of requests across their keys",
    "Alerts page the on-call engineer when refusals exceed two percent",
    "The SDK retries idempotent requests automatically",
    "Health checks from the load balancer never count against a key",
)


class _Store:
    """The real store, seen through a window: ``linked_all`` answers every key to
    ``related_keys`` (each result then walks its edges, as before ``related_keys``), and the
    keys whose edges are read are recorded."""

    def __init__(self, store: Any, *, linked_all: bool) -> None:
        self._inner = store
        self._linked_all = linked_all
        self.edge_reads: list[int] = []

    def related_keys(self, keys: Sequence[int], relations: Sequence[str]) -> set[int]:
        if self._linked_all:
            return set(keys)
        return self._inner.related_keys(keys, relations)  # type: ignore[no-any-return]

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        self.edge_reads.append(key)
        return self._inner.out_edges(key, now, limit)  # type: ignore[no-any-return]

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        self.edge_reads.append(key)
        return self._inner.in_edges(key, now, limit)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def curated(store_dir: Path, clock: Clock) -> Iterator[tuple[MemoryService, set[int]]]:
    """A store of facts about one subject where a few carry a version, duplicate or archive
    edge: (the service, the int64 keys every such edge touches)."""
    with velesmem.open(store_dir, clock=clock, autograph="off").memory as mem:
        for text in PLAIN:
            mem.remember(text)
        old = mem.remember("The API rate limiter allows 600 requests per minute per key.").id
        clock.advance(DAY)
        new = mem.remember("Since December the API rate limiter allows 900 requests per minute "
                           "per key.").id
        first = mem.remember("The billing rate limiter allows 40 requests per minute per key").id
        second = mem.remember("Billing rate limiter: 40 requests a minute per key").id
        mem.relate(second, first, "duplicate_of")
        archived = mem.remember("The search rate limiter counts requests per key each minute").id
        summary = mem.remember("Every rate limiter counts requests per key each minute").id
        mem.relate(archived, summary, "consolidated_into")
        ends = {to_i64(i) for i in (old, new, first, second, archived, summary)}
        linked = {k for e in mem.store.export(mem.now(), include_internal=False)
                  if getattr(e, "relation", None) in CURATING for k in (e.src, e.dst)}
        assert ends <= linked and len(linked) <= 8  # most facts touch no such edge
        yield mem, linked


def _twin(mem: MemoryService, *, linked_all: bool) -> tuple[MemoryService, _Store]:
    store = _Store(mem.store, linked_all=linked_all)
    return MemoryService(store, mem.embedder, mem.now, mem.settings), store  # type: ignore[arg-type]


def test_recall_reads_edges_only_of_results_that_touch_a_version_duplicate_or_archive_edge(
        curated: tuple[MemoryService, set[int]]) -> None:
    mem, linked = curated
    fast, store = _twin(mem, linked_all=False)
    got = fast.recall(QUERY, k=20)
    assert len(got.memories) == 20
    assert {to_i64(m.id) for m in got.memories} & linked  # the linked facts were ranked
    assert store.edge_reads and set(store.edge_reads) <= linked
    store.edge_reads.clear()
    fast.recall_where(QUERY, [], k=20)
    assert store.edge_reads and set(store.edge_reads) <= linked
    store.edge_reads.clear()
    fast.list_memories(limit=100)
    assert set(store.edge_reads) <= linked


@pytest.mark.parametrize("history", [False, True])
def test_recall_answers_as_walking_every_results_edges_does(
        curated: tuple[MemoryService, set[int]], history: bool) -> None:
    mem, _ = curated
    fast, _ = _twin(mem, linked_all=False)
    slow, _ = _twin(mem, linked_all=True)
    for k in (3, 10, 40):
        assert fast.recall(QUERY, k=k, history=history).to_dict() == slow.recall(
            QUERY, k=k, history=history).to_dict()
    assert fast.recall_where(QUERY, [], k=40).to_dict() == slow.recall_where(
        QUERY, [], k=40).to_dict()
    assert fast.list_memories(limit=100).to_dict() == slow.list_memories(limit=100).to_dict()


def test_recall_fused_and_why_answer_as_walking_every_results_edges_does(
        curated: tuple[MemoryService, set[int]]) -> None:
    mem, _ = curated
    fast, _ = _twin(mem, linked_all=False)
    slow, _ = _twin(mem, linked_all=True)
    for k in (3, 10):
        assert fast.recall_fused(QUERY, k=k).to_dict() == slow.recall_fused(QUERY, k=k).to_dict()
    for decision in (QUERY, "The API rate limiter allows 600 requests per minute per key.",
                     "The search rate limiter counts requests per key each minute"):
        assert fast.why(decision, max_hops=3).to_dict() == slow.why(decision,
                                                                    max_hops=3).to_dict()


def test_marks_ask_the_store_only_about_keys_not_asked_about_yet(
        curated: tuple[MemoryService, set[int]]) -> None:
    mem, linked = curated
    store = _Store(mem.store, linked_all=False)
    asked: list[list[int]] = []
    ask = store.related_keys

    def counting(keys: Sequence[int], relations: Sequence[str]) -> set[int]:
        asked.append(list(keys))
        return ask(keys, relations)

    store.related_keys = counting  # type: ignore[method-assign]
    marks = Marks(store, CURATING)  # type: ignore[arg-type]
    some = sorted(linked)[:2]
    marks.learn([*some, 1, 2])
    marks.learn([*some, 1, 2, 3])
    marks.learn([3])
    assert asked == [[*some, 1, 2], [3]]
    assert marks.unlinked == {1, 2, 3}

"""The exact vectors by row in a file: filled as rows join HNSW and in the background, moved
with a rebuild, rewritten when an id comes back with another vector, and never needed for a
right answer (the store answers whatever the file does not hold)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import velesmem
from tests.support import wait_for
from velesmem.ids import parse_id, to_i64
from velesmem.runtime import ThreadSpawner
from velesmem.store.sqlite import vector_index, vector_rows
from velesmem.store.sqlite.backend import SqliteStore
from velesmem.store.sqlite.vector_index import VectorIndex
from velesmem.store.sqlite.vector_rows import RowFile, available

pytestmark = pytest.mark.skipif(not available(), reason="needs pread/pwrite (POSIX)")


def vectors(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_of(index: VectorIndex, ids: np.ndarray) -> dict[int, bytes]:
    found, got = index.exact_vectors(ids)
    return {int(i): got[j].tobytes() for j, i in enumerate(found.tolist())}


def wait_filed(index: VectorIndex) -> None:
    wait_for(lambda: index.pending_count == 0 and not index.rebuilding
             and index.filed_rows == index.live_count,
             what="every live row's exact vector in the file", poll_s=0.01)


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every vector joins HNSW (no exact small-index scan), rebuilds from 10 tombstones."""
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 0)
    monkeypatch.setattr(vector_index, "REBUILD_MIN_TOMBSTONES", 10)


@pytest.fixture
def filed(tmp_path: Path, graph: None) -> Iterator[VectorIndex]:
    """An empty index keeping its exact rows in a file in ``tmp_path``, its indexer running."""
    index = VectorIndex(16)
    index.keep_exact_rows(tmp_path)
    index.start_indexer(ThreadSpawner())
    try:
        yield index
    finally:
        index.stop_indexer()
        index.drop_exact_rows()


def test_rows_are_written_as_they_join_the_graph_and_read_back_exactly(
        filed: VectorIndex) -> None:
    x = vectors(600)
    ids = np.arange(600, dtype=np.int64)
    for start in range(0, 600, 50):
        filed.add(ids[start:start + 50], x[start:start + 50])
    wait_filed(filed)
    assert filed.filed_rows == 600
    assert exact_of(filed, ids) == {i: x[i].tobytes() for i in range(600)}
    plain = VectorIndex(16)
    plain.add(ids, x)
    for q in x[:20]:
        assert filed.search(q, 10) == plain.search(q, 10)
    filed.drop_exact_rows()
    assert filed.filed_rows == 0
    assert exact_of(filed, ids[:5]) == {i: x[i].tobytes() for i in range(5)}  # from the source


def test_rows_already_indexed_are_filled_in_the_background(tmp_path: Path, graph: None) -> None:
    x = vectors(3000, seed=1)
    ids = np.arange(3000, dtype=np.int64) * 7
    index = VectorIndex(16)
    index.bulk_add(ids, x)  # as an index loaded at open: every row there before the file
    index.remove([int(i) for i in ids[:5]])
    index.keep_exact_rows(tmp_path)
    index.start_indexer(ThreadSpawner())
    try:
        wait_filed(index)
        assert index.filed_rows == 2995
        assert exact_of(index, ids[5:]) == {int(ids[i]): x[i].tobytes() for i in range(5, 3000)}
    finally:
        index.stop_indexer()
        index.drop_exact_rows()


def test_a_rebuild_moves_the_rows_and_the_file_follows(filed: VectorIndex) -> None:
    x = vectors(1000, seed=2)
    ids = np.arange(1000, dtype=np.int64)
    filed.add(ids, x)
    wait_filed(filed)
    filed.remove(list(range(0, 1000, 3)))  # a third: past the threshold, rebuilt
    wait_for(lambda: filed.ntotal < 1000, what="the rebuild's swap", poll_s=0.01)
    wait_filed(filed)
    live = [i for i in range(1000) if i % 3]
    assert filed.filed_rows == len(live)
    assert exact_of(filed, ids[live]) == {i: x[i].tobytes() for i in live}


def test_an_id_added_again_with_another_vector_reads_the_new_one(filed: VectorIndex) -> None:
    x = vectors(200, seed=3)
    ids = np.arange(200, dtype=np.int64)
    filed.add(ids, x)
    wait_filed(filed)
    filed.remove([4, 5])
    other = vectors(2, seed=4)
    filed.add(ids[4:6], other)  # revived in place (a re-embedding does the same)
    filed.add(ids[6:7], other[:1])  # a live row given a new vector
    got = exact_of(filed, ids[3:8])
    assert got == {3: x[3].tobytes(), 4: other[0].tobytes(), 5: other[1].tobytes(),
                   6: other[0].tobytes(), 7: x[7].tobytes()}


def test_a_record_past_the_end_of_the_file_is_an_error(tmp_path: Path) -> None:
    rows = RowFile(tmp_path, 4)
    try:
        rows.write(0, np.ones((2, 4), dtype=np.float32))
        assert rows.read(np.array([1, 0])).tolist() == [[1.0] * 4, [1.0] * 4]
        assert rows.read(np.zeros(0, np.int64)).shape == (0, 4)
        with pytest.raises(OSError, match="ends before row 2"):
            rows.read(np.array([2]))
        assert list(tmp_path.iterdir()) == []  # the file has no name
    finally:
        rows.close()


def test_lookups_among_the_newest_rows_see_every_row_added_since_the_last_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The sorted ids of the rows added since the map was sorted are kept between lookups,
    and never outlive an add or a rebuild."""
    monkeypatch.setattr(vector_index, "SORTED_REBUILD_MIN", 100_000)  # every row stays "newest"
    monkeypatch.setattr(vector_index, "REBUILD_MIN_TOMBSTONES", 10)
    x = vectors(400, seed=6)
    ids = np.random.default_rng(6).permutation(400).astype(np.int64) * 11
    index = VectorIndex(16)
    index.add(ids[:1], x[:1])
    assert index.own_vectors(ids[:1])[0].tolist() == [int(ids[0])]  # the map is sorted here
    for start in range(1, 400, 100):
        index.add(ids[start:start + 100], x[start:start + 100])
        found = index.own_vectors(ids[: start + 100])[0]  # more than a scan's 16 at a time
        assert sorted(found.tolist()) == sorted(ids[: start + 100].tolist())
    index.remove([int(i) for i in ids[:150]])  # past the threshold: rebuilt, rows renumbered
    assert index.ntotal == 250
    assert sorted(index.own_vectors(ids)[0].tolist()) == sorted(ids[150:].tolist())


def test_a_reopened_store_is_ready_with_every_row_in_the_file(
        tmp_path: Path, graph: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_rows, "FILL_CHUNK", 1)  # a fill long enough to be seen running
    with velesmem.open(tmp_path, embedder="hash") as runtime:
        for n in range(300):
            runtime.memory.remember(f"fact number {n} about the cache lock")
    with velesmem.open(tmp_path, embedder="hash") as runtime:
        store = runtime.memory.store
        assert isinstance(store, SqliteStore) and store.index is not None
        index = store.index
        assert index.live_count == 300
        assert index.filed_rows == 300  # warm waited for the fill: no search reads the store


def test_scores_read_from_the_file_equal_the_stores(tmp_path: Path, graph: None) -> None:
    with velesmem.open(tmp_path, embedder="hash") as runtime:
        memory = runtime.memory
        ids = [memory.remember(f"note {n}: the rate limiter allows {n} requests").id
               for n in range(120)]
        memory.forget(ids[3])
        store = memory.store
        assert isinstance(store, SqliteStore) and store.index is not None
        index = store.index
        wait_filed(index)
        keys = [to_i64(parse_id(i)) for i in ids[:60]]
        query = memory.embedder.embed(["how many requests does the rate limiter allow"])[0]
        now = memory.now()
        from_file = store.scored(query, keys, now)
        index.drop_exact_rows()
        assert from_file == store.scored(query, keys, now)
        assert len(from_file) == 59 and to_i64(parse_id(ids[3])) not in from_file

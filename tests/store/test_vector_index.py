"""VectorIndex: pending buffer + indexer, tombstones, rebuild, u64 ids, save/load."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from velesmem.ids import to_i64, to_u64
from velesmem.store import vector_index
from velesmem.store.vector_index import VectorIndex


def vectors(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_top(x: np.ndarray, ids: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return [int(ids[i]) for i in np.argsort(-(x @ q), kind="stable")[:k]]


def wait_drained(index: VectorIndex) -> None:
    deadline = time.monotonic() + 30
    while index.pending_count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert index.pending_count == 0


def test_writes_are_searchable_before_and_after_indexing() -> None:
    index = VectorIndex(16)
    index.start_indexer()
    try:
        x = vectors(500)
        ids = np.array([to_i64((1 << 63) + i) for i in range(500)], dtype=np.int64)
        for i in range(0, 500, 25):
            index.add(ids[i:i + 25], x[i:i + 25])
            got = index.search(x[i], 1)
            assert got[0][0] == ids[i]  # immediately visible, pending or not
        wait_drained(index)
        assert index.ntotal == 500 and index.live_count == 500
        assert [i for i, _ in index.search(x[7], 5)] == exact_top(x, ids, x[7], 5)
        assert to_u64(index.search(x[3], 1)[0][0]) == (1 << 63) + 3
    finally:
        index.stop_indexer()


def test_remove_hides_pending_and_indexed_and_add_revives() -> None:
    index = VectorIndex(16)
    x = vectors(50)
    ids = np.arange(50, dtype=np.int64)
    index.add(ids[:25], x[:25])  # no indexer: straight into HNSW
    index.start_indexer()
    index.add(ids[25:], x[25:])
    index.remove([3, 30])
    got = {i for i, _ in index.search(x[3], 50)}
    assert 3 not in got and 30 not in got and len(got) == 48
    index.add(ids[[3, 30]], x[[3, 30]])
    assert index.search(x[30], 1)[0][0] == 30 and index.search(x[3], 1)[0][0] == 3
    assert index.live_count == 50
    index.stop_indexer()
    assert index.pending_count == 0 and index.ntotal == 50


def test_filtered_search_is_the_true_top_k_among_allowed(monkeypatch) -> None:
    x = vectors(400, seed=3)
    ids = np.arange(400, dtype=np.int64)
    index = VectorIndex(16)
    index.add(ids, x)
    allowed = ids[ids % 3 == 0]
    want = exact_top(x[allowed], allowed, x[1], 10)
    assert [i for i, _ in index.search(x[1], 10, allowed)] == want
    monkeypatch.setattr(vector_index, "EXACT_FILTER_MAX", 0)  # selector-based HNSW path
    got = [i for i, _ in index.search(x[1], 10, allowed)]
    assert set(got) <= set(allowed.tolist()) and len(set(got) & set(want)) >= 9


def test_tombstones_past_the_threshold_trigger_a_rebuild(monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "REBUILD_MIN_TOMBSTONES", 10)
    x = vectors(100)
    ids = np.arange(100, dtype=np.int64)
    index = VectorIndex(16)
    index.add(ids, x)
    index.remove(list(range(25)))  # 25 % > 20 %: rebuilt without them
    assert index.ntotal == 75 and index.live_count == 75
    assert [i for i, _ in index.search(x[50], 3)] == exact_top(x[25:], ids[25:], x[50], 3)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    x = vectors(60)
    ids = np.array([to_i64((1 << 64) - 2 - i) for i in range(60)], dtype=np.int64)
    index = VectorIndex(16)
    index.add(ids, x, seq=42)
    index.save(tmp_path, "m")
    loaded = VectorIndex.load(tmp_path, 16, "m")
    assert loaded is not None and loaded.watermark == 42 and loaded.live_count == 60
    assert loaded.search(x[9], 1)[0][0] == ids[9]
    assert VectorIndex.load(tmp_path, 16, "other-model") is None
    assert VectorIndex.load(tmp_path, 32, "m") is None


def test_bm25_scratch_tokenizer_matches_the_store_schema() -> None:
    import inspect

    from velesmem.memory import ranking
    from velesmem.store import schema

    assert f"tokenize='{ranking.FTS_TOKENIZER}'" in inspect.getsource(schema)

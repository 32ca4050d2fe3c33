"""VectorIndex: pending buffer + indexer, tombstones, rebuild, u64 ids, save/load."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.support import DEADLINE_S, deadline_scale, wait_for
from tests.support.bounds import timed
from velesmem.ids import to_i64, to_u64
from velesmem.runtime import ThreadSpawner
from velesmem.store.sqlite import vector_index
from velesmem.store.sqlite.vector_index import VectorIndex


def vectors(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_top(x: np.ndarray, ids: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return [int(ids[i]) for i in np.argsort(-(x @ q), kind="stable")[:k]]


def wait_drained(index: VectorIndex) -> None:
    wait_for(lambda: index.pending_count == 0, what="the index's pending vectors to drain",
             poll_s=0.01)


def test_writes_are_searchable_before_and_after_indexing() -> None:
    index = VectorIndex(16)
    index.start_indexer(ThreadSpawner())
    try:
        x = vectors(500)
        ids = np.array([to_i64((1 << 63) + i) for i in range(500)], dtype=np.int64)
        for i in range(0, 500, 25):
            index.add(ids[i:i + 25], x[i:i + 25])
            got = index.search(x[i], 1)
            assert got[0][0] == ids[i]  # immediately visible, pending or not
        assert [i for i, _ in index.search(x[7], 5)] == exact_top(x, ids, x[7], 5)
    finally:
        index.stop_indexer()  # moves what is pending into HNSW
    assert index.ntotal == 500 and index.live_count == 500 and index.pending_count == 0
    assert [i for i, _ in index.search(x[7], 5)] == exact_top(x, ids, x[7], 5)
    assert to_u64(index.search(x[3], 1)[0][0]) == (1 << 63) + 3


def test_a_small_index_keeps_new_vectors_out_of_the_graph_until_it_outgrows_exact_search(
        monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 100)
    index = VectorIndex(16)
    declined = threading.Event()
    graph_due = index._graph_due

    def watched_graph_due() -> bool:  # the indexer asks this, under its lock, each time it wakes
        due = graph_due()
        if threading.current_thread() is not main and len(index._p_rows) == 100 and not due:
            declined.set()
        return due

    main = threading.current_thread()
    monkeypatch.setattr(index, "_graph_due", watched_graph_due)
    index.start_indexer(ThreadSpawner())
    try:
        x = vectors(150, seed=7)
        ids = np.arange(150, dtype=np.int64)
        index.add(ids[:100], x[:100])
        with index._cv:  # wake the indexer: it looks at the 100 pending vectors and declines
            index._cv.notify_all()
        wait_for(declined.is_set, what="the indexer to look at 100 pending vectors and decline")
        assert index.pending_count == 100 and index.ntotal == 0
        assert [i for i, _ in index.search(x[9], 5)] == exact_top(x[:100], ids[:100], x[9], 5)
        index.add(ids[100:], x[100:])  # 150 live: searches leave the exact scan, so the graph is due
        wait_drained(index)
        assert index.ntotal == 150 and index.live_count == 150
        assert index.search(x[120], 1)[0][0] == 120
    finally:
        index.stop_indexer()


def test_remove_hides_pending_and_indexed_and_add_revives() -> None:
    index = VectorIndex(16)
    x = vectors(50)
    ids = np.arange(50, dtype=np.int64)
    index.add(ids[:25], x[:25])  # no indexer: straight into HNSW
    index.start_indexer(ThreadSpawner())
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


class HeldRebuild:
    """A test hook that holds the background rebuild after its first chunk until released."""

    def __init__(self, index: VectorIndex) -> None:
        self.held = threading.Event()
        self.release = threading.Event()
        index._build_hook = self

    def __call__(self, built: int) -> None:
        self.held.set()
        assert self.release.wait(60), "the test never released the rebuild"

    def wait_held(self) -> None:
        assert self.held.wait(30), "the background rebuild never started"


def within(fn: Callable[[], object]) -> object:
    """``fn()`` run in a thread that must finish before a generous deadline (one blocked
    behind a held rebuild never would)."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    seconds = DEADLINE_S * deadline_scale()
    worker.join(seconds)
    assert not worker.is_alive(), f"did not finish within {seconds:.0f} s"
    return out[0]


def wait_rebuilt(index: VectorIndex) -> None:
    wait_for(lambda: not index.rebuilding, what="the index rebuild to finish", poll_s=0.01)


def rebuilding_index(monkeypatch, n: int = 2000) -> tuple[VectorIndex, np.ndarray, HeldRebuild]:
    """``n`` indexed vectors, ids 0..n-1, the indexer running and a rebuild held mid-build
    after removing ids [0, 450) (past the 20 % threshold)."""
    monkeypatch.setattr(vector_index, "REBUILD_MIN_TOMBSTONES", 10)
    monkeypatch.setattr(vector_index, "REBUILD_CHUNK", 256)
    x = vectors(n + 100, seed=5)
    index = VectorIndex(16)
    index.add(np.arange(n, dtype=np.int64), x[:n])
    index.start_indexer(ThreadSpawner())
    hook = HeldRebuild(index)
    index.remove(list(range(450)))
    hook.wait_held()
    return index, x, hook


def test_search_is_served_while_a_background_rebuild_runs(monkeypatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 0)  # the HNSW + tombstone selector path
    index, x, hook = rebuilding_index(monkeypatch)
    try:
        thread = index._rebuilder
        assert thread is not None and thread.is_alive()
        with timed("vector index: a search during a held rebuild", 5.0):
            got = within(lambda: index.search(x[460], 10))
        assert thread.is_alive() and index.rebuilding  # answered mid-rebuild
        assert got[0][0] == 460
        assert index.ntotal == 2000  # still the old index
        assert not {i for i, _ in index.search(x[3], 100)} & set(range(450))
    finally:
        hook.release.set()
    wait_rebuilt(index)
    assert index.ntotal == 1550 and index.live_count == 1550
    index.stop_indexer()


def test_no_removed_id_is_returned_before_during_or_after_the_swap(monkeypatch) -> None:
    index, x, hook = rebuilding_index(monkeypatch)
    removed = set(range(450))
    removed_lock = threading.Lock()
    stop = threading.Event()
    leaks: list[tuple[int, set[int]]] = []
    searches = [0]

    def searcher() -> None:
        while not stop.is_set():
            with removed_lock:
                gone = set(removed)  # every id whose remove() had returned before this search
            for q in (500, 700, 1200, 1999):
                got = {i for i, _ in index.search(x[q], 50)}
                if got & gone:
                    leaks.append((q, got & gone))
            searches[0] += 1

    thread = threading.Thread(target=searcher, daemon=True)
    thread.start()
    try:
        for i in range(500, 1400, 3):  # in the snapshot, removed during the build
            index.remove([i])
            with removed_lock:
                removed.add(i)
            if i == 800:
                hook.release.set()  # the rest race the build's end and the swap
    finally:
        hook.release.set()
        wait_rebuilt(index)
        before = searches[0]
        wait_for(lambda: searches[0] >= before + 5, what="five searches after the swap",
                 poll_s=0.01)
        stop.set()
        thread.join(30)
    assert not leaks
    live = set(index.live_ids().tolist())
    assert live == set(range(2000)) - removed
    index.stop_indexer()
    assert index.live_count == len(live)


def test_ids_removed_and_added_during_a_rebuild_are_right_after_the_swap(monkeypatch) -> None:
    index, x, hook = rebuilding_index(monkeypatch)
    try:
        index.remove([500, 501])                          # in the snapshot: tombstoned after
        index.add(np.array([3, 7], dtype=np.int64), x[[3, 7]])  # dead at the snapshot: revived
        index.add(np.arange(2000, 2010, dtype=np.int64), x[2000:2010])  # pending (indexer paused)
        index.remove([2000])                              # removed while pending
        index.bulk_add(np.arange(2010, 2020, dtype=np.int64), x[2010:2020])  # old index, late rows
        assert index.pending_count == 9 and index.ntotal == 2010
        for q in (500, 501, 2000):
            assert q not in {i for i, _ in index.search(x[q], 20)}
        for q in (3, 7, 2005, 2015):
            assert index.search(x[q], 1)[0][0] == q
    finally:
        hook.release.set()
    wait_rebuilt(index)
    want = (set(range(450, 2020)) | {3, 7}) - {500, 501, 2000}
    assert set(index.live_ids().tolist()) == want
    for q in (500, 501, 2000):
        assert q not in {i for i, _ in index.search(x[q], 20)}
    for q in (3, 7, 2005, 2015):
        assert index.search(x[q], 1)[0][0] == q
    index.stop_indexer()  # moves what is pending into the new index
    assert index.ntotal == 1550 + 2 + 9 + 10 and index.live_count == len(want)
    live = np.array(sorted(want), dtype=np.int64)
    assert [i for i, _ in index.search(x[900], 10)] == exact_top(x[live], live, x[900], 10)
    assert index.pending_count == 0 and set(index.live_ids().tolist()) == want


def test_save_cancels_a_running_rebuild_and_keeps_the_old_index(monkeypatch,
                                                                 tmp_path: Path) -> None:
    index, x, hook = rebuilding_index(monkeypatch)
    saver = threading.Thread(target=index.save, args=(tmp_path, "m"), daemon=True)
    saver.start()  # what Store.close does
    wait_for(index._rebuild_cancel.is_set, what="save() to cancel the rebuild", poll_s=0.01)
    hook.release.set()
    saver.join(30)
    assert not saver.is_alive() and not index.rebuilding
    assert index.ntotal == 2000 and index.live_count == 1550  # cancelled: old index kept
    assert not {i for i, _ in index.search(x[5], 100)} & set(range(450))
    loaded = VectorIndex.load(tmp_path, 16, "m")
    assert loaded is not None and loaded.ntotal == 2000  # tombstones re-derived at open


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


def test_a_loaded_index_adds_with_this_versions_construction_setting(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """efConstruction is saved in the file; a file written with another value still gets this
    version's for what is added after the load."""
    import faiss

    monkeypatch.setattr(vector_index, "HNSW_EF_CONSTRUCTION", 77)
    index = VectorIndex(16)
    index.add(np.arange(10, dtype=np.int64), vectors(10), seq=1)
    index.save(tmp_path, "m")
    monkeypatch.undo()
    loaded = VectorIndex.load(tmp_path, 16, "m")
    assert loaded is not None
    hnsw = faiss.downcast_index(loaded._index.index).hnsw
    assert hnsw.efConstruction == vector_index.HNSW_EF_CONSTRUCTION != 77


def test_bm25_scratch_tokenizer_matches_the_store_schema() -> None:
    import inspect

    from velesmem.store.sqlite import schema
    from velesmem.store.sqlite import text as ranking

    assert f"tokenize='{ranking.FTS_TOKENIZER}'" in inspect.getsource(schema)


def test_scores_are_exact_and_near_ties_rank_as_with_float32(monkeypatch) -> None:
    """The index holds float16 codes; its scores and exact rankings are float32 ones."""
    rng = np.random.default_rng(11)
    base = vectors(1, seed=11)[0]
    # 300 vectors within float16 rounding of each other's score: their order is decided below
    # the float16 resolution, so only the exact rescoring gets it right
    x = (base + rng.standard_normal((300, 16)).astype(np.float32) * 1e-4).astype(np.float32)
    ids = np.arange(300, dtype=np.int64)
    index = VectorIndex(16)
    index.add(ids, x)
    q = base
    for allowed in (None, ids[ids % 2 == 0]):
        pool = ids if allowed is None else allowed
        sims = x[pool] @ q
        want = [int(pool[i]) for i in np.lexsort((pool, -sims))[:10]]
        got = index.search(q, 10, allowed)
        assert [i for i, _ in got] == want
        assert [s for _, s in got] == pytest.approx([float(x[i] @ q) for i in want], rel=1e-6)
        # the candidates a ranking scores itself hold the exact top 10, and more near-ties
        assert set(index.candidates(q, 10, allowed).tolist()) >= set(want)
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 0)  # the HNSW path: scores exact too
    got = index.search(q, 5)
    assert [s for _, s in got] == pytest.approx([float(x[i] @ q) for i, _ in got], rel=1e-6)



def test_ids_are_found_in_the_sorted_rows_and_in_the_rows_added_since(monkeypatch) -> None:
    """The id → row map (sorted rows + a scan of the newest) finds every row, dead or alive."""
    monkeypatch.setattr(vector_index, "SORTED_REBUILD_MIN", 100)
    x = vectors(3000, seed=9)
    rng = np.random.default_rng(9)
    ids = rng.permutation(np.unique(rng.integers(-(1 << 62), 1 << 62, 3100)))[:3000]
    index = VectorIndex(16)
    for start in range(0, 3000, 7):  # many small adds: the sorted part lags behind
        index.add(ids[start:start + 7], x[start:start + 7])
    gone = ids[::3].tolist()  # from the sorted part and from the newest rows
    index.remove(gone)
    assert index.live_count == 3000 - len(gone) and index.ntotal == 3000
    index.add(ids[::3][:50], x[::3][:50])  # revived in place, not added again
    assert index.ntotal == 3000 and index.live_count == 3000 - len(gone) + 50
    assert set(index.own_vectors(ids[:6])[0].tolist()) == set(ids[:6].tolist())
    assert ids[3 * 60] not in dict(index.search(x[3 * 60], 5))
    index.bulk_add(ids, x)  # every id is known: nothing is added
    assert index.ntotal == 3000


def _exact_ranking(x: np.ndarray, pool: np.ndarray, q: np.ndarray, n: int) -> list[int]:
    sims = x[pool] @ q
    return [int(pool[i]) for i in np.lexsort((pool, -sims))[:n]]


def test_small_sets_rank_exactly_with_components_past_the_8bit_range(tmp_path: Path) -> None:
    """Vectors that are not unit length have components beyond [-1, 1], which the 8-bit codes
    clip: the exact scans widen their bound by that overshoot, also after a save and a load
    (the sidecar keeps it), so the top n is still the float32 one."""
    rng = np.random.default_rng(5)
    base = vectors(1, seed=5)[0]
    # near ties around one direction, scaled to norm 3: a component up to ~2.4 is clipped to 1
    x = (base + rng.standard_normal((400, 16)).astype(np.float32) * 0.05)
    x = (3 * x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    assert np.abs(x).max() > vector_index.SQ8_RANGE
    ids = np.arange(400, dtype=np.int64)
    index = VectorIndex(16)
    index.add(ids, x)
    index.save(tmp_path, "m")
    loaded = VectorIndex.load(tmp_path, 16, "m", source=index.source)
    assert loaded is not None
    for probe in (index, loaded):
        for allowed in (None, ids[ids % 3 == 0]):
            pool = ids if allowed is None else allowed
            assert [i for i, _ in probe.search(base, 10, allowed)] == _exact_ranking(x, pool, base, 10)


def test_an_index_file_without_its_magnitudes_is_rebuilt_not_read(tmp_path: Path) -> None:
    """The clip bound comes from the sidecar: a format-3 sidecar without it is not trusted."""
    import json

    index = VectorIndex(16)
    index.add(np.arange(50, dtype=np.int64), vectors(50, seed=6))
    index.save(tmp_path, "m")
    side = tmp_path / vector_index.SIDECAR_FILE
    data = json.loads(side.read_text(encoding="utf-8"))
    assert data["format"] == vector_index.FORMAT and data["max_abs"] <= 1.0
    del data["max_abs"]
    side.write_text(json.dumps(data), encoding="utf-8")
    assert VectorIndex.load(tmp_path, 16, "m") is None


def test_a_wide_8bit_window_is_narrowed_by_exact_scores_and_still_ranks_exactly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Dense 384-d queries make the 8-bit bound wide (|q|_1 ~ 15): the exact scores of the best
    few candidates cut the window to a fraction, and the top n stays the float32 one."""
    rng = np.random.default_rng(8)
    centres = rng.standard_normal((20, 384)).astype(np.float32)
    x = centres[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 384)).astype(np.float32)
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    ids = np.arange(3000, dtype=np.int64)
    index = VectorIndex(384)
    index.bulk_add(ids, x)  # straight into the 8-bit storage, scanned exactly (3,000 rows)
    queries = x[rng.integers(0, 3000, 10)] + rng.standard_normal((10, 384)).astype(np.float32) * 0.02
    narrowed = [len(index.candidates(q, 10)) for q in queries]
    for q in queries:
        assert [i for i, _ in index.search(q, 10)] == _exact_ranking(x, ids, q, 10)
        allowed = ids[ids % 2 == 1]
        assert [i for i, _ in index.search(q, 10, allowed)] == _exact_ranking(x, allowed, q, 10)
    monkeypatch.setattr(vector_index, "TIGHTEN_ABOVE", 10**9)  # the whole window
    wide = [len(index.candidates(q, 10)) for q in queries]
    assert sum(narrowed) < sum(wide)


@pytest.mark.parametrize("layout", ["pending", "8-bit scan", "graph"])
def test_a_batch_of_searches_finds_what_each_search_finds_alone(
        monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """``search_many`` (the curation lane's batch) gives each query the ids and scores its own
    ``search`` gives, over the pending buffer, the exact 8-bit scan (wide windows narrowed) and
    the graph, with removed ids and per-query n."""
    monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 500)
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((12, 384)).astype(np.float32)
    x = centres[rng.integers(0, 12, 1200)] + rng.standard_normal((1200, 384)).astype(np.float32)
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    ids = np.array([to_i64((1 << 63) + 7 * i) for i in range(1200)], dtype=np.int64)
    index = VectorIndex(384)
    if layout == "pending":
        index.start_indexer(ThreadSpawner())  # a small index: everything stays pending
        index.add(ids[:400], x[:400])
    elif layout == "8-bit scan":
        index.bulk_add(ids[:450], x[:450])
        index.start_indexer(ThreadSpawner())
        index.add(ids[450:480], x[450:480])  # pending beside the scanned storage
    else:
        index.bulk_add(ids, x)
    index.remove(ids[::9].tolist())
    try:
        queries = list(x[rng.integers(0, 400, 12)]
                       + rng.standard_normal((12, 384)).astype(np.float32) * 0.05)
        ns = [9, 25, 1, 9, 0, 40, 9, 9, 3, 9, 17, 9]
        assert index.search_many(queries, ns) == [index.search(q, n) for q, n in zip(queries, ns)]
        assert index.search_many([], []) == []
    finally:
        index.stop_indexer()

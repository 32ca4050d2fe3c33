"""The FAISS index: a derived, rebuildable cache of the user facts' vectors.

Kind: ``IndexIDMap(IndexHNSWSQ(d, float16, M=32, inner product))``, efConstruction 32, efSearch
max(160, n). The index holds float16 codes (half the memory of float32) and finds candidates by
them; the scores it returns are exact: the candidates' stored float32 vectors (``exact.py``:
SQLite, the truth) are read back and multiplied with the query. Where a search is exact (small
sets, below), every row whose float16 score is within the rounding bound of the n-th best is a
candidate, so the exact top n is the same as with float32 vectors. FAISS ids are the u64 fact
ids reinterpreted as int64 (``ids.to_i64``). HNSW cannot remove vectors, so a forgotten or expired
fact becomes a tombstone: every search excludes tombstones (an ``IDSelectorNot`` over them, or a
bitmap of the live rows in the exact path) and the index is rebuilt
from its own live vectors once tombstones pass a fifth of it. With the indexer running that rebuild
happens in a background thread with no lock held while it adds vectors (searches keep using the old
index and its tombstones); a short write-locked swap then applies what changed meanwhile.

Small sets are searched exactly: the whole index when it holds at most ``EXACT_SCAN_MAX`` live
vectors, and a filter's candidates when they are at most ``EXACT_FILTER_MAX`` (a flat scan of the
float16 storage restricted by a bitmap, then the exact rescoring). While the whole index is that
small, new vectors wait in the exact pending buffer instead of the graph (until it outgrows that
size, or is saved): no search would use their links. Bigger filtered searches use an
``IDSelectorBatch`` with efSearch scaled by the filter's selectivity. Every search runs on one
OpenMP thread (faster for single queries, and deterministic).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import faiss
import numpy as np

from velesmem.spawner import Spawner
from velesmem.store.sqlite import faiss_growth
from velesmem.store.sqlite.exact import MemoryVectors
from velesmem.store.sqlite.rwlock import RWLock

HNSW_M = 32  # 16 searched faster but lost near-duplicates among tombstones (docs/engine.md)
HNSW_EF_CONSTRUCTION = 32  # 40: recall@10 0.995 vs 0.994 at 100k for 37 % more insertion CPU
HNSW_EF_SEARCH = 160  # 100k hash vectors: recall@10 0.96 at 128, 0.975 at 200 (docs/engine.md)
MAX_EF_SEARCH = 4096
EXACT_SCAN_MAX = 4_096
EXACT_FILTER_MAX = 8_192
SORTED_REBUILD_MIN = 4_096  # rows added before the sorted id → row map is rebuilt
LOOKUP_SCAN_MAX = 16  # ids looked up one by one among the rows added since (else sorted)
REBUILD_MIN_TOMBSTONES = 1024
REBUILD_TOMBSTONE_FRACTION = 0.2
PENDING_CHUNK = 64  # vectors moved into HNSW per indexer step (the write lock is held meanwhile)
INDEX_LINGER_S = 0.05  # the indexer waits this long for a chunk to fill before it inserts less
PENDING_MAX = 8192  # beyond this many pending vectors, add() waits for the indexer
REBUILD_CHUNK = 2048  # vectors per add in a background rebuild (a cancel waits at most one chunk)
INDEX_FILE = "vectors.faiss"  # the first embedding space's files; others add "-<space>"
SIDECAR_FILE = "vectors.json"
# 2: IndexIDMap(IndexHNSWSQ float16). A format-1 file (IndexIDMap2(IndexHNSWFlat)) is not
# read: the index is rebuilt from the stored vectors at open, like any stale file.
FORMAT = 2
# float16 rounding: |x - x16| <= 2^-11 |x| (2^-24 below 2^-14; FAISS flushes those to 0, an
# error of at most 2^-14). Twice both, so the bound also covers float32 summation.
FP16_REL_ERR = 2.0 ** -10
FP16_ABS_ERR = 2.0 ** -13
APPROX_EXTRA = 32  # rows beyond n an exact scan asks the float16 storage for at first
NEIGHBOUR_INTS_PER_VECTOR = 4 * HNSW_M  # HNSW links reserved per added vector (about 2M used)
DECODE_CHUNK = 4096  # float16 rows decoded at a time (norms at load, synchronous rebuilds)
FILE_MODE = 0o600


def index_files(directory: Path, space: int) -> tuple[Path, Path]:
    """The FAISS file and its sidecar for embedding space ``space``."""
    suffix = "" if space == 1 else f"-{space}"
    return directory / f"vectors{suffix}.faiss", directory / f"vectors{suffix}.json"

_omp = threading.local()
log = logging.getLogger(__name__)


def single_thread() -> None:
    """Make FAISS use one OpenMP thread in the calling thread (OpenMP settings are per thread)."""
    if not getattr(_omp, "set", False):
        faiss.omp_set_num_threads(1)
        _omp.set = True


def _new_faiss(dimension: int) -> faiss.IndexIDMap:
    hnsw = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_fp16, HNSW_M,
                             faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    hnsw.hnsw.efSearch = HNSW_EF_SEARCH
    return faiss.IndexIDMap(hnsw)


def _parts(index: faiss.IndexIDMap) -> tuple[faiss.IndexHNSW, faiss.IndexScalarQuantizer]:
    """The HNSW index inside ``index`` and its flat float16 storage."""
    hnsw = faiss.downcast_index(index.index)
    return hnsw, faiss.downcast_index(hnsw.storage)


def add_to(index: faiss.IndexIDMap, ids: np.ndarray, vectors: np.ndarray) -> None:
    """``index.add_with_ids``, its codes and links grown in place first (``faiss_growth``)."""
    hnsw, storage = _parts(index)
    n = len(ids)
    faiss_growth.reserve(storage.codes, (storage.ntotal + n) * storage.code_size)
    faiss_growth.reserve(hnsw.hnsw.neighbors,
                         (hnsw.hnsw.neighbors.size() + n * NEIGHBOUR_INTS_PER_VECTOR) * 4)
    index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                       np.ascontiguousarray(ids, dtype=np.int64))


def decode(index: faiss.IndexIDMap, rows: np.ndarray) -> np.ndarray:
    """The float16 vectors of storage ``rows``, as float32 (exactly what the index holds)."""
    _, storage = _parts(index)
    if len(rows) == 0:
        return np.zeros((0, storage.d), dtype=np.float32)
    codes = faiss.rev_swig_ptr(storage.codes.data(), storage.ntotal * storage.code_size)
    return storage.sa_decode(codes.reshape(storage.ntotal, storage.code_size)[rows])


class ExactSource(Protocol):
    """Where the exact float32 vectors of an index's ids come from."""

    def fetch(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (ids, float32 vectors) of those of ``ids`` that have one, in any order."""
        ...


class VectorIndex:
    """Vectors by int64 id: HNSW for the bulk, an exact pending buffer for the newest writes.

    ``add`` only appends to the pending buffer (cheap, so the writer acknowledges fast); the
    indexer thread moves pending vectors into HNSW in small chunks, once the index holds more
    than ``EXACT_SCAN_MAX`` live vectors (below that every search is exact: a graph would only
    cost each write its insertion). Searches scan the pending buffer exactly and merge it with
    the HNSW (or exact) result, so a write is searchable as soon as it is acknowledged. Without
    a running indexer ``add`` goes straight to HNSW. ``source`` gives the exact vectors of
    candidates (the store's); without one the index keeps a float32 copy of what it is given
    (``MemoryVectors``).
    """

    def __init__(self, dimension: int, index: faiss.IndexIDMap | None = None,
                 watermark: int = 0, source: ExactSource | None = None) -> None:
        self.dimension = dimension
        self.watermark = watermark  # highest SQLite ``seq`` reflected in the index
        self.lock = RWLock()
        self._index = index if index is not None else _new_faiss(dimension)
        self._memory = MemoryVectors(dimension) if source is None else None
        self.source: ExactSource = self._memory if source is None else source
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        self._n = len(ids)
        self._max_norm = self._stored_max_norm()  # bounds the float16 error of a score
        self._row_ids = np.zeros(max(1024, self._n * 2), dtype=np.int64)
        self._row_ids[: self._n] = ids
        self._dead = np.zeros(len(self._row_ids), dtype=bool)
        # (ids of rows [0, base) sorted, their rows, base): the id → row map (``_lookup``)
        self._sorted: tuple[np.ndarray, np.ndarray, int] | None = None
        self._n_dead = 0
        self._not_dead_sel: faiss.IDSelector | None = None
        self._sel_keep: tuple[object, ...] = ()
        # pending buffer: rows [head, tail) of _p_ids/_p_vecs, _p_rows maps live ids to rows
        self._p_ids = np.zeros(PENDING_CHUNK * 4, dtype=np.int64)
        self._p_vecs = np.zeros((PENDING_CHUNK * 4, dimension), dtype=np.float32)
        self._p_alive = np.zeros(PENDING_CHUNK * 4, dtype=bool)
        self._p_head = self._p_tail = 0
        self._p_rows: dict[int, int] = {}
        self._cv = threading.Condition()
        self._indexer: threading.Thread | None = None
        self._spawner: Spawner | None = None  # start_indexer's: it runs the rebuilds too
        self._stop = False
        # the background tombstone rebuild; while it runs the indexer pauses (see _rebuild_loop)
        self._rebuilder: threading.Thread | None = None
        self._rebuild_cancel = threading.Event()
        self._build_hook: Callable[[int], None] | None = None  # tests: called after each chunk

    # --- size -------------------------------------------------------------------------------
    def _stored_max_norm(self) -> float:
        """The largest norm of the vectors the index holds (read in chunks at load)."""
        best = 0.0
        for start in range(0, self._n, DECODE_CHUNK):
            rows = np.arange(start, min(self._n, start + DECODE_CHUNK))
            best = max(best, float(np.linalg.norm(decode(self._index, rows), axis=1).max()))
        return best

    @property
    def ntotal(self) -> int:
        """Vectors held by HNSW (tombstones included)."""
        return self._n

    @property
    def pending_count(self) -> int:
        return len(self._p_rows)

    @property
    def live_count(self) -> int:
        return self._n - self._n_dead + len(self._p_rows)

    def row_ids(self) -> np.ndarray:
        """The ids of every HNSW row, tombstones included (what a saved file holds)."""
        with self.lock.read():
            return self._row_ids[: self._n].copy()

    def live_ids(self) -> np.ndarray:
        """The int64 ids of every live vector."""
        with self.lock.read():
            main = self._row_ids[: self._n][~self._dead[: self._n]]
            return np.concatenate([main, np.fromiter(self._p_rows, dtype=np.int64)])

    # --- the indexer thread -------------------------------------------------------------------
    def start_indexer(self, spawner: Spawner) -> None:
        """Move pending vectors into HNSW in the background from now on, on a thread of
        ``spawner`` (which also runs the tombstone rebuilds)."""
        with self._cv:  # the loop's own exit takes it: it never runs before the assignment
            if self._indexer is None:
                self._stop = False
                self._spawner = spawner
                self._indexer = spawner.thread("velesmem-indexer", self._index_loop)

    @property
    def rebuilding(self) -> bool:
        """Whether a background tombstone rebuild is running."""
        return self._rebuilder is not None

    def stop_indexer(self) -> None:
        """Stop the background work (cancel a running rebuild, stop the indexer) and index
        whatever is still pending. A cancelled rebuild leaves the old index and its tombstones."""
        self._cancel_rebuild()
        thread = self._indexer
        if thread is not None:
            with self._cv:
                self._stop = True
                self._cv.notify_all()
            thread.join()
            self._indexer = None
        self._cancel_rebuild()  # one a racing remove() started before the indexer stopped
        while self._p_rows:
            self._index_pending(PENDING_CHUNK * 16)

    def _cancel_rebuild(self) -> None:
        rebuilder = self._rebuilder
        if rebuilder is not None:
            self._rebuild_cancel.set()
            rebuilder.join()

    def _index_loop(self) -> None:
        single_thread()
        while True:
            with self._cv:
                # paused during a rebuild: what stays pending goes straight into the new index
                while not self._stop and (self._rebuilder is not None or not self._graph_due()):
                    self._cv.wait()
                # a chunk, or what came within the linger: one insertion call for many writes,
                # and one wake (add() notifies a chunk, or the first pending vector)
                deadline = time.monotonic() + INDEX_LINGER_S
                while (not self._stop and self._rebuilder is None
                       and len(self._p_rows) < PENDING_CHUNK):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if self._stop:
                    return
                if self._rebuilder is not None:
                    continue
            try:
                self._index_pending(PENDING_CHUNK)
            except Exception:  # stay correct: add() goes synchronous from now on
                log.exception("the FAISS indexer failed; indexing synchronously")
                with self._cv:
                    self._indexer = None
                    self._cv.notify_all()
                return
            with self._cv:
                self._cv.notify_all()

    def _graph_due(self) -> bool:
        """Whether pending vectors should move into HNSW now: not while the index is small
        enough that every search scans it exactly, where a graph would cost each write an
        insertion no search uses."""
        return bool(self._p_rows) and self.live_count > EXACT_SCAN_MAX

    def _index_pending(self, limit: int) -> None:
        single_thread()
        with self.lock.write():
            head, tail = self._p_head, self._p_tail
            stop = min(tail, head + limit)
            alive = np.flatnonzero(self._p_alive[head:stop]) + head
            if len(alive):
                self._add_main(self._p_ids[alive].copy(), self._p_vecs[alive].copy())
                for i in self._p_ids[alive].tolist():
                    del self._p_rows[i]
            self._p_alive[head:stop] = False
            self._p_head = stop
            if self._p_head == self._p_tail:
                self._p_head = self._p_tail = 0

    def _add_main(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Append to HNSW (hold the write lock)."""
        add_to(self._index, ids, vectors)
        if len(ids):
            self._max_norm = max(self._max_norm,
                                 float(np.linalg.norm(vectors, axis=1).max()))
        need = self._n + len(ids)
        if need > len(self._row_ids):
            cap = max(need, len(self._row_ids) * 2)
            self._row_ids = np.resize(self._row_ids, cap)
            dead = np.zeros(cap, dtype=bool)
            dead[: self._n] = self._dead[: self._n]
            self._dead = dead
        self._row_ids[self._n:need] = ids
        self._dead[self._n:need] = False
        self._n = need

    # --- mutation -----------------------------------------------------------------------------
    def bulk_add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add many vectors straight into HNSW on every core (opening a store, rebuilding)."""
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        if self._memory is not None:
            self._memory.put(ids, vectors)
        try:
            with self.lock.write():
                rows = self._lookup(ids)
                fresh = [p for p, i in enumerate(ids.tolist())
                         if rows[p] < 0 and i not in self._p_rows]
                if fresh:
                    self._add_main(ids[fresh], vectors[fresh])
        finally:
            faiss.omp_set_num_threads(1)
            _omp.set = True

    def add(self, ids: np.ndarray, vectors: np.ndarray, seq: int | None = None) -> None:
        """Add vectors under int64 ids; an id already present (even tombstoned) is revived."""
        single_thread()
        if self._memory is not None:
            self._memory.put(ids, vectors)
        with self.lock.write():
            fresh: list[int] = []
            waiting, was_due = len(self._p_rows), self._graph_due()
            rows = self._lookup(ids).tolist()
            for pos, i in enumerate(ids.tolist()):
                row = rows[pos]
                if row >= 0:
                    if self._dead[row]:
                        self._dead[row] = False
                        self._n_dead -= 1
                        self._not_dead_sel = None
                elif i not in self._p_rows:
                    fresh.append(pos)
            if fresh and self._indexer is None:
                self._add_main(ids[fresh], vectors[fresh])
            elif fresh:
                self._append_pending(ids[fresh], vectors[fresh])
            if seq is not None:
                self.watermark = max(self.watermark, seq)
        if (fresh and self._indexer is not None and self._graph_due()
                and (waiting == 0 or not was_due or len(self._p_rows) >= PENDING_CHUNK)):
            with self._cv:
                self._cv.notify_all()
                # backpressure: never let the exact buffer outgrow a cheap scan
                while len(self._p_rows) > PENDING_MAX and self._indexer is not None:
                    self._cv.wait(timeout=1.0)

    def _append_pending(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        need = self._p_tail + len(ids)
        if need > len(self._p_ids):
            live = slice(self._p_head, self._p_tail)
            count = self._p_tail - self._p_head
            cap = max(len(self._p_ids), 2 * (count + len(ids)))
            p_ids = np.zeros(cap, dtype=np.int64)
            p_vecs = np.zeros((cap, self.dimension), dtype=np.float32)
            p_alive = np.zeros(cap, dtype=bool)
            p_ids[:count], p_vecs[:count], p_alive[:count] = (
                self._p_ids[live], self._p_vecs[live], self._p_alive[live])
            self._p_ids, self._p_vecs, self._p_alive = p_ids, p_vecs, p_alive
            self._p_head, self._p_tail = 0, count
            self._p_rows = {int(i): r for r, i in enumerate(p_ids[:count].tolist())
                            if p_alive[r]}
            need = count + len(ids)
        start = self._p_tail
        self._p_ids[start:need] = ids
        self._p_vecs[start:need] = vectors
        self._p_alive[start:need] = True
        for off, i in enumerate(ids.tolist()):
            self._p_rows[i] = start + off
        self._p_tail = need

    def remove(self, ids: list[int]) -> None:
        """Tombstone these int64 ids; rebuild when tombstones pass the threshold."""
        with self.lock.write():
            rows = self._lookup(np.asarray(ids, dtype=np.int64)).tolist()
            for i, row in zip(ids, rows):
                prow = self._p_rows.pop(i, None)
                if prow is not None:
                    self._p_alive[prow] = False
                if row >= 0 and not self._dead[row]:
                    self._dead[row] = True
                    self._n_dead += 1
                    self._not_dead_sel = None
            if self._rebuilder is None and self._needs_rebuild():
                if self._indexer is None:
                    self._rebuild_locked()
                else:
                    self._start_rebuild()

    def _needs_rebuild(self) -> bool:
        return self._n_dead >= max(REBUILD_MIN_TOMBSTONES, REBUILD_TOMBSTONE_FRACTION * self._n)

    def _start_rebuild(self) -> None:
        """Start the background rebuild (hold the write lock)."""
        self._rebuild_cancel.clear()
        rows = self._snapshot()
        assert self._spawner is not None  # a background rebuild only beside the indexer
        spawner = self._spawner
        with self._cv:  # _end_rebuild takes it: the thread is recorded before it can end
            self._rebuilder = spawner.thread("velesmem-rebuild",
                                             lambda: self._rebuild_loop(rows))

    def _snapshot(self) -> np.ndarray:
        """The live HNSW rows to keep (hold the write lock). Rows below ``_n`` never move and
        their vectors never change until the swap, so the builder may read them later."""
        return np.flatnonzero(~self._dead[: self._n])

    def _rebuild_loop(self, rows: np.ndarray) -> None:
        """Build a new index from ``rows`` of the old one, swap it in, repeat while tombstones
        added meanwhile still pass the threshold; on cancel or failure keep the old index."""
        single_thread()
        try:
            while True:
                built = self._build(rows)
                if built is None:
                    return
                with self.lock.write():
                    self._swap(rows, *built)
                    if self._rebuild_cancel.is_set() or not self._needs_rebuild():
                        self._end_rebuild()  # inside the lock: the next remove() may start one
                        return
                    rows = self._snapshot()
        except Exception:  # the old index stays correct (tombstones exclude the dead)
            log.exception("the background FAISS rebuild failed; keeping the old index")
        finally:
            self._end_rebuild()

    def _end_rebuild(self) -> None:
        with self._cv:
            if self._rebuilder is threading.current_thread():
                self._rebuilder = None
            self._cv.notify_all()  # the paused indexer and waiting writers

    def _build(self, rows: np.ndarray) -> tuple[faiss.IndexIDMap, np.ndarray] | None:
        """A new index of the old index's ``rows``, built with no lock held except a read lock
        while each chunk's vectors are copied out; None when cancelled."""
        index = _new_faiss(self.dimension)
        with self.lock.read():
            ids = self._row_ids[rows].copy()
        for start in range(0, len(rows), REBUILD_CHUNK):
            if self._rebuild_cancel.is_set():
                return None
            chunk = rows[start:start + REBUILD_CHUNK]
            with self.lock.read():
                vecs = decode(self._index, chunk)
            add_to(index, ids[start:start + len(chunk)], vecs)
            if self._build_hook is not None:
                self._build_hook(start + len(chunk))
        if self._rebuild_cancel.is_set():
            return None
        return index, ids

    def _swap(self, rows: np.ndarray, index: faiss.IndexIDMap, ids: np.ndarray) -> None:
        """Install the new index (hold the write lock): snapshot ids removed since are
        tombstoned in it; old rows alive now but not in it (revived, or indexed since the
        snapshot) go back to the pending buffer, so the indexer adds them to the new index."""
        dead = self._dead[rows].copy()
        extra = ~self._dead[: self._n]
        extra[rows] = False
        extra_rows = np.flatnonzero(extra)
        extra_ids = self._row_ids[extra_rows].copy()
        extra_vecs = decode(self._index, extra_rows)
        n = len(ids)
        cap = max(1024, n * 2)
        self._index = index
        self._n = n
        self._row_ids = np.zeros(cap, dtype=np.int64)
        self._row_ids[:n] = ids
        self._dead = np.zeros(cap, dtype=bool)
        self._dead[:n] = dead
        self._n_dead = int(dead.sum())
        self._sorted = None
        self._not_dead_sel = None
        self._sel_keep = ()
        if len(extra_ids):
            self._append_pending(extra_ids, extra_vecs)

    def _rebuild_locked(self) -> None:
        """Rebuild without the tombstones, in this thread (hold the write lock), a chunk of
        decoded vectors at a time."""
        single_thread()
        old = self._index
        keep = np.flatnonzero(~self._dead[: self._n])
        ids = self._row_ids[keep].copy()
        self._index = _new_faiss(self.dimension)
        self._n = 0
        self._sorted = None
        self._n_dead = 0
        self._not_dead_sel = None
        self._sel_keep = ()
        for start in range(0, len(keep), DECODE_CHUNK):
            chunk = keep[start:start + DECODE_CHUNK]
            self._add_main(ids[start:start + len(chunk)], decode(old, chunk))

    # --- search (take the read lock; exact scores are read after it is released) -------------
    def search(self, query: np.ndarray, n: int,
               allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-``n`` live ids by exact inner product, best first (ties by id); ``allowed`` (int64
        ids) restricts the search to those ids and returns the true top-n among them when exact."""
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(self.dimension)
        return self._rescore(q, self.candidates(query, n, allowed), n)

    def candidates(self, query: np.ndarray, n: int,
                   allowed: np.ndarray | None = None) -> np.ndarray:
        """The live ids ``search`` rescores: its top ``n``, and more where float16 scores lie too
        close to the n-th to tell apart (int64, in no particular order)."""
        single_thread()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dimension)
        with self.lock.read():
            if n <= 0 or self.live_count == 0:
                return np.zeros(0, np.int64)
            bound = self._error_bound(q[0])
            pending = self._pending_approx(q[0], allowed)
            if allowed is None:
                live_main = self._n - self._n_dead
                if live_main <= EXACT_SCAN_MAX:
                    main = self._scan(q, n, None, live_main, bound)
                else:
                    main = self._hnsw(q, n, self._not_dead_selector(), live_main)
            else:
                rows = self._rows_of(allowed)
                if len(rows) <= EXACT_FILTER_MAX:
                    main = self._scan(q, n, rows, len(rows), bound)
                else:
                    main = self._hnsw_rows(q, n, rows)
        ids = np.concatenate([main[0], pending[0]])
        approx = np.concatenate([main[1], pending[1]])
        return _near_top(ids, approx, n, bound)

    def _error_bound(self, q: np.ndarray) -> float:
        """How far a float16 score may be from the exact one, for any vector of the index."""
        return (FP16_REL_ERR * float(np.linalg.norm(q)) * self._max_norm
                + FP16_ABS_ERR * float(np.abs(q).sum()))

    def _rescore(self, q: np.ndarray, ids: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The top ``n`` of ``ids`` by exact inner product with their stored vectors."""
        found, vectors = self.source.fetch(ids)
        return _top(vectors @ q if len(found) else np.zeros(0, np.float32), found, n)

    def _pending_approx(self, q: np.ndarray,
                        allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if not self._p_rows:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        live = slice(self._p_head, self._p_tail)
        rows = np.flatnonzero(self._p_alive[live])
        ids = self._p_ids[live][rows]
        if allowed is not None:
            keep = np.isin(ids, allowed)
            return ids[keep], self._p_vecs[live][rows[keep]] @ q
        return ids, (self._p_vecs[live] @ q)[rows]  # a view: the small-index scan copies nothing

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The live HNSW rows holding ``ids`` (hold a lock), found with numpy: binary search in
        a sorted copy of the ids of rows [0, base) (re-sorted once rows added since pass an
        eighth of it), and in the few rows added since."""
        n = self._n
        sorted_ids, sorted_rows, base_n = self._sorted_base()
        ids = np.asarray(ids, dtype=np.int64)
        found = np.zeros(0, np.int64)
        if len(sorted_ids) and len(ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = sorted_ids[pos] == ids
            found = sorted_rows[pos[hit]]
        if n > base_n and len(ids):
            tail = self._row_ids[base_n:n]
            wanted = ids if np.all(ids[1:] >= ids[:-1]) else np.sort(ids)
            pos = np.minimum(np.searchsorted(wanted, tail), len(wanted) - 1)
            found = np.concatenate([found, np.flatnonzero(wanted[pos] == tail) + base_n])
        return found[~self._dead[found]] if len(found) else found

    def _sorted_base(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The sorted ids of rows [0, base), their rows, and base (hold a lock), re-sorted once
        the rows added since pass an eighth of it."""
        n = self._n
        base = self._sorted
        if base is None or n - base[2] > max(SORTED_REBUILD_MIN, base[2] // 8):
            order = np.argsort(self._row_ids[:n], kind="stable")
            base = (self._row_ids[:n][order], order.astype(np.int64), n)
            self._sorted = base
        return base

    def _lookup(self, ids: np.ndarray) -> np.ndarray:
        """The HNSW row of each of ``ids``, tombstoned ones included, -1 where none (hold a
        lock): a binary search in the sorted rows, a scan of the few added since."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        if not len(ids) or not self._n:
            return out
        sorted_ids, sorted_rows, base_n = self._sorted_base()
        if len(sorted_ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = sorted_ids[pos] == ids
            out[hit] = sorted_rows[pos[hit]]
        if self._n > base_n:
            tail = self._row_ids[base_n:self._n]
            if len(ids) <= LOOKUP_SCAN_MAX:
                for k in np.flatnonzero(out < 0).tolist():
                    at = np.flatnonzero(tail == ids[k])
                    if len(at):
                        out[k] = base_n + int(at[0])
            else:
                order = np.argsort(tail, kind="stable")
                pos = np.minimum(np.searchsorted(tail[order], ids), len(tail) - 1)
                hit = (tail[order][pos] == ids) & (out < 0)
                out[hit] = base_n + order[pos[hit]]
        return out

    def _scan(self, q: np.ndarray, n: int, rows: np.ndarray | None, count: int,
              bound: float) -> tuple[np.ndarray, np.ndarray]:
        """A flat scan of the float16 storage (the live rows, or ``rows``): every row whose
        float16 score is within twice ``bound`` of the n-th best, so the exact top n is among
        them (ids, float16 scores)."""
        if count == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        _, storage = _parts(self._index)
        params, packed = None, None
        if rows is not None or self._n_dead:
            bits = ~self._dead[: self._n] if rows is None else np.zeros(self._n, dtype=bool)
            if rows is not None:
                bits[rows] = True
            packed = np.packbits(bits, bitorder="little")
            params = faiss.SearchParameters()
            params.sel = faiss.IDSelectorBitmap(self._n, faiss.swig_ptr(packed))
        k = min(count, n + max(n, APPROX_EXTRA))
        while True:
            dist, labels = storage.search(q, k, params=params)
            if k >= count or dist[0][k - 1] < dist[0][min(n, k) - 1] - 2 * bound:
                break
            k = min(count, 4 * k)
        del packed  # only now may the bitmap the selector points into go
        keep = labels[0] >= 0
        return self._row_ids[labels[0][keep]], dist[0][keep]

    def _not_dead_selector(self) -> faiss.IDSelector | None:
        if self._n_dead == 0:
            return None
        if self._not_dead_sel is None:
            batch = faiss.IDSelectorBatch(self._row_ids[: self._n][self._dead[: self._n]])
            self._not_dead_sel = faiss.IDSelectorNot(batch)
            self._sel_keep = (batch,)  # the Not selector does not own the batch
        return self._not_dead_sel

    def _hnsw(self, q: np.ndarray, n: int, sel: faiss.IDSelector | None,
              candidates: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(n, candidates)
        selectivity = candidates / max(self._n, 1)
        ef = int(min(MAX_EF_SEARCH, max(HNSW_EF_SEARCH, n) / max(selectivity, 1e-6)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, n))
        if sel is not None:
            params.sel = sel
        dist, labels = self._index.search(q, n, params=params)
        keep = labels[0] != -1
        return labels[0][keep], dist[0][keep]

    def _hnsw_rows(self, q: np.ndarray, n: int,
                   rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """HNSW search restricted to ``rows``: a bitmap over the inner index's rows (built with
        numpy in well under a millisecond, where an id hash set of 50k ids takes ~4 ms)."""
        bits = np.zeros(self._n, dtype=bool)
        bits[rows] = True
        packed = np.packbits(bits, bitorder="little")
        sel = faiss.IDSelectorBitmap(self._n, faiss.swig_ptr(packed))
        n = min(n, len(rows))
        selectivity = len(rows) / max(self._n, 1)
        ef = int(min(MAX_EF_SEARCH, max(HNSW_EF_SEARCH, n) / max(selectivity, 1e-6)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, n))
        params.sel = sel
        dist, labels = faiss.downcast_index(self._index.index).search(q, n, params=params)
        del packed  # only now may the bitmap the selector points into go
        keep = labels[0] != -1
        return self._row_ids[labels[0][keep]], dist[0][keep]

    def own_vectors(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The vectors the index itself holds for the live ones of ``ids`` (float16 ones as
        float32, pending ones as given)."""
        with self.lock.read():
            keys = np.asarray(ids, dtype=np.int64).tolist()
            rows = self._lookup(np.asarray(keys, dtype=np.int64)).tolist()
            main = [(i, r) for i, r in zip(keys, rows) if r >= 0 and not self._dead[r]]
            pend = [(i, self._p_rows[i]) for i in keys if i in self._p_rows]
            vectors = np.vstack([decode(self._index, np.asarray([r for _, r in main], np.int64)),
                                 self._p_vecs[[r for _, r in pend]]])
        return np.asarray([i for i, _ in main + pend], dtype=np.int64), vectors

    # --- persistence -------------------------------------------------------------------------
    def save(self, directory: Path, model: str, space: int = 1) -> None:
        """Write the index and its sidecar (watermark, checksum) atomically via rename, readable
        by the owner only.

        Tombstones are not saved: the open-time replay against SQLite re-derives them."""
        self.stop_indexer()  # everything pending goes into the saved file
        index_path, side_path = index_files(directory, space)
        with self.lock.read():
            tmp = index_path.with_name(index_path.name + ".tmp")
            faiss.write_index(self._index, str(tmp))
            watermark, ntotal = self.watermark, self.ntotal
        os.chmod(tmp, FILE_MODE)
        digest = _sha256(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        side = {"format": FORMAT, "dimension": self.dimension, "model": model, "space": space,
                "watermark": watermark, "ntotal": ntotal, "sha256": digest}
        side_tmp = side_path.with_name(side_path.name + ".tmp")
        fd = os.open(side_tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(side))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, index_path)
        os.replace(side_tmp, side_path)
        _fsync_dir(directory)

    @classmethod
    def load(cls, directory: Path, dimension: int, model: str, space: int = 1,
             source: ExactSource | None = None) -> VectorIndex | None:
        """The saved index if its sidecar, checksum and shape check out; None means rebuild
        (also for a file of an older format)."""
        path, side_path = index_files(directory, space)
        try:
            side = json.loads(side_path.read_text(encoding="utf-8"))
            if side.get("format") != FORMAT:
                log.info("the saved FAISS index of space %d has format %s, this velesmem "
                         "writes %d: rebuilding it from the stored vectors", space,
                         side.get("format"), FORMAT)
                return None
            if (side.get("dimension") != dimension or side.get("model") != model
                    or side.get("space", 1) != space or _sha256(path) != side.get("sha256")):
                return None
            index = faiss.read_index(str(path))  # already downcast; keep this reference
            if (type(index) is not faiss.IndexIDMap or index.d != dimension
                    or index.ntotal != side.get("ntotal")
                    or not isinstance(faiss.downcast_index(index.index), faiss.IndexHNSWSQ)):
                return None
            # a build setting the file keeps: what is added from now on uses this version's
            faiss.downcast_index(index.index).hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            loaded = cls(dimension, index, int(side.get("watermark", 0)), source)
            if source is None:  # no store behind it: its own float16 vectors will do
                loaded.source, loaded._memory = _OwnVectors(loaded), None
            return loaded
        except (OSError, ValueError, RuntimeError, TypeError, AttributeError):
            return None


class _OwnVectors:
    """An index's own vectors standing in for the exact ones (an index loaded without a store,
    as ``verify`` does)."""

    def __init__(self, index: VectorIndex) -> None:
        self._index = index

    def fetch(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._index.own_vectors(ids)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _near_top(ids: np.ndarray, approx: np.ndarray, n: int, bound: float) -> np.ndarray:
    """The ids whose approximate score is within twice ``bound`` of the n-th best one: the
    exact top n is among them when each score is within ``bound`` of the exact one."""
    if len(ids) <= n:
        return ids
    nth = np.partition(approx, len(approx) - n)[len(approx) - n]
    return ids[approx >= nth - 2 * bound]


def _top(sims: np.ndarray, ids: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` best (id, similarity), best first, ties by id."""
    if len(ids) == 0:
        return []
    if n < len(ids):
        part = np.argpartition(-sims, n - 1)[:n]
        sims, ids = sims[part], ids[part]
    order = np.lexsort((ids, -sims))
    return [(int(ids[o]), float(sims[o])) for o in order]

"""The FAISS index: a derived, rebuildable cache of the user facts' vectors.

Kind: ``IndexIDMap2(IndexHNSWFlat(d, M=32, inner product))``, efConstruction 40, efSearch
max(64, n). FAISS ids are the u64 fact ids reinterpreted as int64 (``ids.to_i64``). HNSW cannot
remove vectors, so a forgotten or expired fact becomes a tombstone: every search excludes
tombstones (an ``IDSelectorNot`` over them, or a mask in the exact path) and the index is rebuilt
from its own live vectors once tombstones pass a fifth of it.

Small sets are searched exactly: the whole index when it holds at most ``EXACT_SCAN_MAX`` live
vectors, and a filter's candidates when they are at most ``EXACT_FILTER_MAX`` (numpy over the
vectors the flat storage already holds, no copy). Bigger filtered searches use an
``IDSelectorBatch`` with efSearch scaled by the filter's selectivity. Every search runs on one
OpenMP thread (faster for single queries, and deterministic).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import faiss
import numpy as np

from velesmem.store.rwlock import RWLock

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 40
HNSW_EF_SEARCH = 64
MAX_EF_SEARCH = 4096
EXACT_SCAN_MAX = 10_000
EXACT_FILTER_MAX = 20_000
REBUILD_MIN_TOMBSTONES = 1024
REBUILD_TOMBSTONE_FRACTION = 0.2
INDEX_FILE = "vectors.faiss"
SIDECAR_FILE = "vectors.json"
FORMAT = 1

_omp = threading.local()


def single_thread() -> None:
    """Make FAISS use one OpenMP thread in the calling thread (OpenMP settings are per thread)."""
    if not getattr(_omp, "set", False):
        faiss.omp_set_num_threads(1)
        _omp.set = True


def _new_faiss(dimension: int) -> faiss.IndexIDMap2:
    hnsw = faiss.IndexHNSWFlat(dimension, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    hnsw.hnsw.efSearch = HNSW_EF_SEARCH
    return faiss.IndexIDMap2(hnsw)


class VectorIndex:
    """Vectors by int64 id, with tombstones, exact and HNSW search, and a watermark."""

    def __init__(self, dimension: int, index: faiss.IndexIDMap2 | None = None,
                 watermark: int = 0) -> None:
        self.dimension = dimension
        self.watermark = watermark  # highest SQLite ``seq`` reflected in the index
        self.lock = RWLock()
        self._index = index if index is not None else _new_faiss(dimension)
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        self._row_ids = ids
        self._rows: dict[int, int] = {int(i): r for r, i in enumerate(ids)}
        self._dead = np.zeros(len(ids), dtype=bool)
        self._n_dead = 0
        self._not_dead_sel: faiss.IDSelector | None = None
        self._sel_keep: tuple[object, ...] = ()

    # --- size -------------------------------------------------------------------------------
    @property
    def ntotal(self) -> int:
        return len(self._row_ids)

    @property
    def live_count(self) -> int:
        return self.ntotal - self._n_dead

    def live_ids(self) -> np.ndarray:
        """The int64 ids of every live vector."""
        with self.lock.read():
            return self._row_ids[~self._dead].copy()

    # --- mutation (callers hold no lock; these take the write lock) --------------------------
    def add(self, ids: np.ndarray, vectors: np.ndarray, seq: int | None = None) -> None:
        """Add vectors under int64 ids; an id already present (even tombstoned) is revived."""
        single_thread()
        with self.lock.write():
            fresh: list[int] = []
            for pos, i in enumerate(ids.tolist()):
                row = self._rows.get(i)
                if row is None:
                    fresh.append(pos)
                elif self._dead[row]:
                    self._dead[row] = False
                    self._n_dead -= 1
                    self._not_dead_sel = None
            if fresh:
                new_ids = np.ascontiguousarray(ids[fresh], dtype=np.int64)
                self._index.add_with_ids(np.ascontiguousarray(vectors[fresh], dtype=np.float32),
                                         new_ids)
                base = len(self._row_ids)
                self._row_ids = np.concatenate([self._row_ids, new_ids])
                self._dead = np.concatenate([self._dead, np.zeros(len(new_ids), dtype=bool)])
                for off, i in enumerate(new_ids.tolist()):
                    self._rows[i] = base + off
            if seq is not None:
                self.watermark = max(self.watermark, seq)

    def remove(self, ids: list[int]) -> None:
        """Tombstone these int64 ids; rebuild when tombstones pass the threshold."""
        with self.lock.write():
            for i in ids:
                row = self._rows.get(i)
                if row is not None and not self._dead[row]:
                    self._dead[row] = True
                    self._n_dead += 1
                    self._not_dead_sel = None
            if self._n_dead >= max(REBUILD_MIN_TOMBSTONES,
                                   REBUILD_TOMBSTONE_FRACTION * self.ntotal):
                self._rebuild_locked()

    def _rebuild_locked(self) -> None:
        single_thread()
        keep = ~self._dead
        vectors = self._xb()[keep].copy()
        ids = self._row_ids[keep].copy()
        index = _new_faiss(self.dimension)
        if len(ids):
            index.add_with_ids(vectors, ids)
        self._index = index
        self._row_ids = ids
        self._rows = {int(i): r for r, i in enumerate(ids)}
        self._dead = np.zeros(len(ids), dtype=bool)
        self._n_dead = 0
        self._not_dead_sel = None

    # --- search (take the read lock) ---------------------------------------------------------
    def _xb(self) -> np.ndarray:
        """A zero-copy view of the stored vectors, row order = insertion order (hold a lock)."""
        n = self.ntotal
        if n == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        hnsw = faiss.downcast_index(self._index.index)
        storage = faiss.downcast_index(hnsw.storage)
        return faiss.rev_swig_ptr(storage.get_xb(), n * self.dimension).reshape(n, self.dimension)

    def search(self, query: np.ndarray, n: int,
               allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-``n`` live ids by inner product, best first (ties by id); ``allowed`` (int64 ids)
        restricts the search to those ids and returns the true top-n among them when exact."""
        single_thread()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dimension)
        with self.lock.read():
            if n <= 0 or self.live_count == 0:
                return []
            if allowed is None:
                if self.live_count <= EXACT_SCAN_MAX:
                    return self._exact(q[0], np.flatnonzero(~self._dead), n)
                return self._hnsw(q, n, self._not_dead_selector(), self.live_count)
            rows = self._rows_of(allowed)
            if len(rows) <= EXACT_FILTER_MAX:
                return self._exact(q[0], rows, n)
            return self._hnsw(q, n, faiss.IDSelectorBatch(self._row_ids[rows]), len(rows))

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        get = self._rows.get
        rows = [r for r in (get(i) for i in ids.tolist()) if r is not None]
        arr = np.asarray(rows, dtype=np.int64)
        return arr[~self._dead[arr]] if len(arr) else arr

    def _exact(self, q: np.ndarray, rows: np.ndarray, n: int) -> list[tuple[int, float]]:
        if len(rows) == 0:
            return []
        sims = self._xb()[rows] @ q
        ids = self._row_ids[rows]
        if n < len(rows):
            part = np.argpartition(-sims, n - 1)[:n]
            sims, ids = sims[part], ids[part]
        order = np.lexsort((ids, -sims))
        return [(int(ids[o]), float(sims[o])) for o in order]

    def _not_dead_selector(self) -> faiss.IDSelector | None:
        if self._n_dead == 0:
            return None
        if self._not_dead_sel is None:
            batch = faiss.IDSelectorBatch(self._row_ids[self._dead])
            self._not_dead_sel = faiss.IDSelectorNot(batch)
            self._sel_keep = (batch,)  # the Not selector does not own the batch
        return self._not_dead_sel

    def _hnsw(self, q: np.ndarray, n: int, sel: faiss.IDSelector | None,
              candidates: int) -> list[tuple[int, float]]:
        n = min(n, candidates)
        selectivity = candidates / max(self.ntotal, 1)
        ef = int(min(MAX_EF_SEARCH, max(HNSW_EF_SEARCH, n) / max(selectivity, 1e-6)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, n))
        if sel is not None:
            params.sel = sel
        dist, labels = self._index.search(q, n, params=params)
        out = [(int(i), float(d)) for i, d in zip(labels[0], dist[0]) if i != -1]
        out.sort(key=lambda t: (-t[1], t[0]))
        return out

    def similarities(self, query: np.ndarray, ids: list[int]) -> dict[int, float]:
        """Exact inner product of ``query`` with each live id present in the index."""
        q = np.asarray(query, dtype=np.float32).reshape(self.dimension)
        with self.lock.read():
            pairs = [(i, self._rows.get(i)) for i in ids]
            pairs = [(i, r) for i, r in pairs if r is not None and not self._dead[r]]
            if not pairs:
                return {}
            rows = np.asarray([r for _, r in pairs], dtype=np.int64)
            sims = self._xb()[rows] @ q
            return {i: float(s) for (i, _), s in zip(pairs, sims)}

    # --- persistence -------------------------------------------------------------------------
    def save(self, directory: Path, model: str) -> None:
        """Write the index and its sidecar (watermark, checksum) atomically via rename.

        Tombstones are not saved: the open-time diff against SQLite re-derives them."""
        with self.lock.read():
            tmp = directory / (INDEX_FILE + ".tmp")
            faiss.write_index(self._index, str(tmp))
            watermark, ntotal = self.watermark, self.ntotal
        digest = _sha256(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        side = {"format": FORMAT, "dimension": self.dimension, "model": model,
                "watermark": watermark, "ntotal": ntotal, "sha256": digest}
        side_tmp = directory / (SIDECAR_FILE + ".tmp")
        side_tmp.write_text(json.dumps(side), encoding="utf-8")
        os.replace(tmp, directory / INDEX_FILE)
        os.replace(side_tmp, directory / SIDECAR_FILE)

    @classmethod
    def load(cls, directory: Path, dimension: int, model: str) -> VectorIndex | None:
        """The saved index if its sidecar, checksum and shape check out; None means rebuild."""
        path, side_path = directory / INDEX_FILE, directory / SIDECAR_FILE
        try:
            side = json.loads(side_path.read_text(encoding="utf-8"))
            if (side.get("format") != FORMAT or side.get("dimension") != dimension
                    or side.get("model") != model or _sha256(path) != side.get("sha256")):
                return None
            index = faiss.read_index(str(path))
            if not isinstance(index, faiss.IndexIDMap2):
                index = faiss.downcast_index(index)
            if (not isinstance(index, faiss.IndexIDMap2) or index.d != dimension
                    or index.ntotal != side.get("ntotal")):
                return None
            return cls(dimension, index, int(side.get("watermark", 0)))
        except (OSError, ValueError, RuntimeError, TypeError, AttributeError):
            return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

"""The FAISS index: a derived, rebuildable cache of the user facts' vectors.

Kind: ``IndexIDMap(IndexHNSWSQ(d, 8-bit uniform, M=32, inner product))``, efConstruction 32,
efSearch max(120, n). The index holds one byte per component (a quarter of float32: 100k vectors
of 384 take 37 MiB of codes), quantised uniformly over [-1, 1] — the range of every component of
an L2-normalised vector, which every embedder returns — so the quantiser needs no training and a
code never depends on the data added before it. The index only finds candidates: their stored
float32 vectors (``exact.py``: SQLite, the truth) are read back and multiplied with the query, so
the scores it returns are exact. A graph search asks for at least ``RESCORE_CANDIDATES`` of them
and keeps the best n after rescoring. Where a search is exact (small sets, below), every row
whose 8-bit score is within the quantisation bound of the n-th best is a candidate, so the exact
top n is the same as with float32 vectors (the bound: half a step per component times the
query's L1 norm, widened by how far any stored component ever went past the range). FAISS ids
are the u64 fact ids reinterpreted as int64 (``ids.to_i64``). HNSW cannot remove vectors, so a
forgotten or expired fact becomes a tombstone: every search excludes tombstones (an
``IDSelectorNot`` over them, or a bitmap of the live rows in the exact path) and the index is
rebuilt from its own live vectors once tombstones pass a fifth of it (re-encoding a decoded
8-bit vector gives the same codes, so rebuilds lose nothing more). With the indexer running that
rebuild happens in a background thread with no lock held while it adds vectors (searches keep
using the old index and its tombstones); a short write-locked swap then applies what changed
meanwhile.

Small sets are searched exactly: the whole index when it holds at most ``EXACT_SCAN_MAX`` live
vectors, and a filter's candidates when they are at most ``EXACT_FILTER_MAX`` (a flat scan of the
8-bit storage restricted by a bitmap, then the exact rescoring). While the whole index is that
small, new vectors wait in the exact pending buffer instead of the graph (until it outgrows that
size, or is saved): no search would use their links. Bigger filtered searches use an
``IDSelectorBatch`` with efSearch scaled by the filter's selectivity. Every search runs on one
OpenMP thread (faster for single queries, and deterministic).

An index file of an older format (1: float32 HNSW; 2: float16 HNSW) is not read: the index is
rebuilt from the stored vectors at open and saved in this format at close.

The class is composed of parts by operation: the pending buffer and indexer (``vector_pending``),
the tombstone rebuild (``vector_rebuild``) and search (``vector_search``), over the state declared
in ``vector_state``; the tunables below and the FAISS helpers stay here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import faiss
import numpy as np

from velesmem.spawner import Spawner
from velesmem.store.sqlite import faiss_growth
from velesmem.store.sqlite.exact import MemoryVectors
from velesmem.store.sqlite.rwlock import RWLock
from velesmem.store.sqlite.vector_pending import PendingPart
from velesmem.store.sqlite.vector_rebuild import RebuildPart
from velesmem.store.sqlite.vector_rows import RowFile, RowsPart
from velesmem.store.sqlite.vector_search import SearchPart

HNSW_M = 32  # 16 searched faster but lost near-duplicates among tombstones (docs/engine.md)
HNSW_EF_CONSTRUCTION = 32  # 40: recall@10 0.995 vs 0.994 at 100k for 37 % more insertion CPU
HNSW_EF_SEARCH = 120  # chosen by bench/ef_search.py on its tuning sets (docs/engine.md)
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
# 3: IndexIDMap(IndexHNSWSQ 8-bit uniform over [-SQ8_RANGE, SQ8_RANGE]). Files of format 1
# (IndexIDMap2(IndexHNSWFlat)) and 2 (IndexIDMap(IndexHNSWSQ float16)) are not read: the index is
# rebuilt from the stored vectors at open, like any stale file.
FORMAT = 3
SQ8_RANGE = 1.0  # |component| of an L2-normalised vector; beyond it a code is clipped
# A component in range decodes within half a step (2 * SQ8_RANGE / 255 wide) of its value.
SQ8_ABS_ERR = SQ8_RANGE / 255
# float32 summation of a 384-term score (and the decoder's own rounding): far below this share
# of |q| * |x|, so the bound stays a bound.
SUM_REL_ERR = 2.0 ** -10
# Candidates a graph search rescores exactly (at least n): 8-bit scores rank a few true top-10
# neighbours just below the 10th (100k clustered vectors: recall@10 0.91 rescoring 10, 0.97
# rescoring 40, as float16 codes give).
RESCORE_CANDIDATES = 40
# Beyond TIGHTEN_ABOVE (or 2n) candidates in an exact scan's window, the best TIGHTEN_FIRST (or
# 2n) by 8-bit score are read and scored exactly first, and their n-th score narrows the window
# (4,000 clustered 384-d vectors, n = 10: 876 candidates a query became 93). Above
# RESCORE_CANDIDATES, so a graph search's candidates are read once.
TIGHTEN_ABOVE = 64
TIGHTEN_FIRST = 32
APPROX_EXTRA = 32  # rows beyond n an exact scan asks the 8-bit storage for at first
NEIGHBOUR_INTS_PER_VECTOR = 4 * HNSW_M  # HNSW links reserved per added vector (about 2M used)
DECODE_CHUNK = 4096  # 8-bit rows decoded at a time (synchronous rebuilds)
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


def new_faiss(dimension: int) -> faiss.IndexIDMap:
    """An empty index of this format: its quantiser's range set to [-SQ8_RANGE, SQ8_RANGE]
    (training on the two corners of that cube), so it needs no data."""
    hnsw = faiss.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_8bit_uniform, HNSW_M,
                             faiss.METRIC_INNER_PRODUCT)
    corners = np.vstack([np.full(dimension, -SQ8_RANGE), np.full(dimension, SQ8_RANGE)])
    hnsw.train(corners.astype(np.float32))
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    hnsw.hnsw.efSearch = HNSW_EF_SEARCH
    return faiss.IndexIDMap(hnsw)


def faiss_parts(index: faiss.IndexIDMap) -> tuple[faiss.IndexHNSW, faiss.IndexScalarQuantizer]:
    """The HNSW index inside ``index`` and its flat 8-bit storage."""
    hnsw = faiss.downcast_index(index.index)
    return hnsw, faiss.downcast_index(hnsw.storage)


def add_to(index: faiss.IndexIDMap, ids: np.ndarray, vectors: np.ndarray) -> None:
    """``index.add_with_ids``, its codes and links grown in place first (``faiss_growth``)."""
    hnsw, storage = faiss_parts(index)
    n = len(ids)
    faiss_growth.reserve(storage.codes, (storage.ntotal + n) * storage.code_size)
    faiss_growth.reserve(hnsw.hnsw.neighbors,
                         (hnsw.hnsw.neighbors.size() + n * NEIGHBOUR_INTS_PER_VECTOR) * 4)
    index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                       np.ascontiguousarray(ids, dtype=np.int64))


def decode(index: faiss.IndexIDMap, rows: np.ndarray) -> np.ndarray:
    """The decoded 8-bit vectors of storage ``rows``, as float32 (exactly what the index holds)."""
    _, storage = faiss_parts(index)
    if len(rows) == 0:
        return np.zeros((0, storage.d), dtype=np.float32)
    codes = faiss.rev_swig_ptr(storage.codes.data(), storage.ntotal * storage.code_size)
    decoded: np.ndarray = storage.sa_decode(codes.reshape(storage.ntotal, storage.code_size)[rows])
    return decoded


class ExactSource(Protocol):
    """Where the exact float32 vectors of an index's ids come from."""

    def fetch(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (ids, float32 vectors) of those of ``ids`` that have one, in any order."""
        ...


class VectorIndex(PendingPart, RebuildPart, SearchPart, RowsPart):
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
                 watermark: int = 0, source: ExactSource | None = None,
                 magnitude: tuple[float, float] | None = None) -> None:
        self.dimension = dimension
        self.watermark = watermark  # highest SQLite ``seq`` reflected in the index
        self.lock = RWLock()
        self._index = index if index is not None else new_faiss(dimension)
        self._memory: MemoryVectors | None = None
        if source is None:
            source = self._memory = MemoryVectors(dimension)
        self.source: ExactSource = source
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        self._n = len(ids)
        # the largest |component| and norm of any vector ever added (a saved file's sidecar
        # keeps them: decoded codes do not show a clipped component): they bound a score's error
        self._max_abs, self._max_norm = magnitude or self._stored_magnitude()
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
        # the exact vectors by row in a file (``keep_exact_rows``); ``_filed``: rows written
        self._rows_file: RowFile | None = None
        self._filed = np.zeros(len(self._row_ids), dtype=bool)
        self._fill_generation = 0  # bumped when rows move (a rebuild)
        self._filler: threading.Thread | None = None
        self._fill_stop = threading.Event()
        self._p_inexact: set[int] = set()  # pending ids holding decoded vectors (a rebuild's)
        self._tail: tuple[tuple[int, int], np.ndarray, np.ndarray] | None = None  # _sorted_tail
        self._last_search = 0.0  # monotonic: when a search last started (the fill yields to them)

    # --- size -------------------------------------------------------------------------------
    def _stored_magnitude(self) -> tuple[float, float]:
        """The largest |component| and norm of the vectors the index holds, as decoded (read
        in chunks)."""
        top, best = 0.0, 0.0
        for start in range(0, self._n, DECODE_CHUNK):
            rows = decode(self._index, np.arange(start, min(self._n, start + DECODE_CHUNK)))
            top = max(top, float(np.abs(rows).max()))
            best = max(best, float(np.linalg.norm(rows, axis=1).max()))
        return top, best

    @property
    def ntotal(self) -> int:
        """Vectors held by HNSW (tombstones included)."""
        return self._n

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

    def _add_main(self, ids: np.ndarray, vectors: np.ndarray,
                  exact: bool | np.ndarray = False) -> None:
        """Append to HNSW (hold the write lock); the rows ``exact`` marks (all when True) hold
        the exact vectors, and go to the exact vector file too."""
        add_to(self._index, ids, vectors)
        if len(ids):
            self._max_abs = max(self._max_abs, float(np.abs(vectors).max()))
            self._max_norm = max(self._max_norm,
                                 float(np.linalg.norm(vectors, axis=1).max()))
        need = self._n + len(ids)
        if need > len(self._row_ids):
            cap = max(need, len(self._row_ids) * 2)
            self._row_ids = np.resize(self._row_ids, cap)
            dead = np.zeros(cap, dtype=bool)
            dead[: self._n] = self._dead[: self._n]
            self._dead = dead
            filed = np.zeros(cap, dtype=bool)
            filed[: self._n] = self._filed[: self._n]
            self._filed = filed
        self._row_ids[self._n:need] = ids
        self._dead[self._n:need] = False
        self._filed[self._n:need] = False
        rows = np.arange(self._n, need)
        self._n = need
        if exact is not False:
            mask = np.ones(len(rows), dtype=bool) if exact is True else np.asarray(exact, bool)
            self._file_rows(rows[mask], vectors[mask])

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
                    self._add_main(ids[fresh], vectors[fresh], exact=True)
        finally:
            faiss.omp_set_num_threads(1)
            _omp.set = True

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
            magnitude = {"max_abs": self._max_abs, "max_norm": self._max_norm}
        os.chmod(tmp, FILE_MODE)
        digest = _sha256(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        side = {"format": FORMAT, "dimension": self.dimension, "model": model, "space": space,
                "watermark": watermark, "ntotal": ntotal, "sha256": digest, **magnitude}
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
            magnitude = (float(side["max_abs"]), float(side["max_norm"]))
            index = faiss.read_index(str(path))  # already downcast; keep this reference
            if (type(index) is not faiss.IndexIDMap or index.d != dimension
                    or index.ntotal != side.get("ntotal")
                    or not isinstance(faiss.downcast_index(index.index), faiss.IndexHNSWSQ)
                    or faiss_parts(index)[1].sq.qtype != faiss.ScalarQuantizer.QT_8bit_uniform):
                return None
            # a build setting the file keeps: what is added from now on uses this version's
            faiss.downcast_index(index.index).hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            loaded = cls(dimension, index, int(side.get("watermark", 0)), source, magnitude)
            if source is None:  # no store behind it: its own decoded vectors will do
                loaded.source, loaded._memory = _OwnVectors(loaded), None
            return loaded
        except (OSError, ValueError, RuntimeError, TypeError, AttributeError, KeyError):
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


def near_top(ids: np.ndarray, approx: np.ndarray, n: int, bound: float) -> np.ndarray:
    """The ids whose approximate score is within twice ``bound`` of the n-th best one: the
    exact top n is among them when each score is within ``bound`` of the exact one."""
    if len(ids) <= n:
        return ids
    nth = np.partition(approx, len(approx) - n)[len(approx) - n]
    kept: np.ndarray = ids[approx >= nth - 2 * bound]
    return kept


def top_n(sims: np.ndarray, ids: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` best (id, similarity), best first, ties by id."""
    if len(ids) == 0:
        return []
    order = np.lexsort((ids, -sims))[:n]  # a partition would pick any of the n-th's ties
    return [(int(ids[o]), float(sims[o])) for o in order]

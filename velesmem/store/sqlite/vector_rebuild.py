"""The tombstone rebuild of ``VectorIndex``: HNSW cannot remove a vector, so once tombstones
pass a fifth of the index it is rebuilt from its own live vectors, in a background thread with
no lock held while it adds vectors, then swapped in under a short write lock that applies what
changed meanwhile.
"""

from __future__ import annotations

import logging
import threading

import faiss
import numpy as np

from velesmem.store.sqlite import vector_index as vi
from velesmem.store.sqlite.vector_state import VectorState

log = logging.getLogger(__name__)


class RebuildPart(VectorState):
    """Rebuilding the graph without its tombstones (background, or synchronous)."""

    @property
    def rebuilding(self) -> bool:
        """Whether a background tombstone rebuild is running."""
        return self._rebuilder is not None

    def _cancel_rebuild(self) -> None:
        rebuilder = self._rebuilder
        if rebuilder is not None:
            self._rebuild_cancel.set()
            rebuilder.join()

    def _needs_rebuild(self) -> bool:
        return self._n_dead >= max(vi.REBUILD_MIN_TOMBSTONES,
                                   vi.REBUILD_TOMBSTONE_FRACTION * self._n)

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
        vi.single_thread()
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
        index = vi.new_faiss(self.dimension)
        with self.lock.read():
            ids = self._row_ids[rows].copy()
        for start in range(0, len(rows), vi.REBUILD_CHUNK):
            if self._rebuild_cancel.is_set():
                return None
            chunk = rows[start:start + vi.REBUILD_CHUNK]
            with self.lock.read():
                vecs = vi.decode(self._index, chunk)
            vi.add_to(index, ids[start:start + len(chunk)], vecs)
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
        extra_vecs = vi.decode(self._index, extra_rows)
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
        self._tail = None
        self._not_dead_sel = None
        self._sel_keep = ()
        self._forget_filed()
        if len(extra_ids):
            self._append_pending(extra_ids, extra_vecs, exact=False)
        self._start_fill()

    def _rebuild_locked(self) -> None:
        """Rebuild without the tombstones, in this thread (hold the write lock), a chunk of
        decoded vectors at a time."""
        vi.single_thread()
        old = self._index
        keep = np.flatnonzero(~self._dead[: self._n])
        ids = self._row_ids[keep].copy()
        self._index = vi.new_faiss(self.dimension)
        self._n = 0
        self._forget_filed()
        self._sorted = None
        self._tail = None
        self._n_dead = 0
        self._not_dead_sel = None
        self._sel_keep = ()
        for start in range(0, len(keep), vi.DECODE_CHUNK):
            chunk = keep[start:start + vi.DECODE_CHUNK]
            self._add_main(ids[start:start + len(chunk)], vi.decode(old, chunk))

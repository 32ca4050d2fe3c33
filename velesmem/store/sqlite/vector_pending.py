"""The pending buffer and the indexer thread of ``VectorIndex``.

``add`` only appends to the pending buffer (cheap, so the writer acknowledges fast); the indexer
thread moves pending vectors into HNSW in small chunks once the index is big enough for a graph
to pay (``EXACT_SCAN_MAX``); without a running indexer ``add`` goes straight to HNSW.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from velesmem.spawner import Spawner
from velesmem.store.sqlite import vector_index as vi
from velesmem.store.sqlite.vector_state import VectorState

log = logging.getLogger(__name__)


class PendingPart(VectorState):
    """The newest vectors, searchable at once, and the thread that indexes them."""

    @property
    def pending_count(self) -> int:
        return len(self._p_rows)

    def start_indexer(self, spawner: Spawner) -> None:
        """Move pending vectors into HNSW in the background from now on, on a thread of
        ``spawner`` (which also runs the tombstone rebuilds)."""
        with self._cv:  # the loop's own exit takes it: it never runs before the assignment
            if self._indexer is None:
                self._stop = False
                self._spawner = spawner
                self._indexer = spawner.thread("velesmem-indexer", self._index_loop)
        self._start_fill()

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
        self._stop_fill()
        while self._p_rows:
            self._index_pending(vi.PENDING_CHUNK * 16)

    def _index_loop(self) -> None:
        vi.single_thread()
        while True:
            with self._cv:
                # paused during a rebuild: what stays pending goes straight into the new index
                while not self._stop and (self._rebuilder is not None or not self._graph_due()):
                    self._cv.wait()
                # a chunk, or what came within the linger: one insertion call for many writes,
                # and one wake (add() notifies a chunk, or the first pending vector)
                deadline = time.monotonic() + vi.INDEX_LINGER_S
                while (not self._stop and self._rebuilder is None
                       and len(self._p_rows) < vi.PENDING_CHUNK):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if self._stop:
                    return
                if self._rebuilder is not None:
                    continue
            try:
                self._index_pending(vi.PENDING_CHUNK)
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
        return bool(self._p_rows) and self.live_count > vi.EXACT_SCAN_MAX

    def _index_pending(self, limit: int) -> None:
        vi.single_thread()
        with self.lock.write():
            head, tail = self._p_head, self._p_tail
            stop = min(tail, head + limit)
            alive = np.flatnonzero(self._p_alive[head:stop]) + head
            if len(alive):
                ids = self._p_ids[alive].copy()
                exact: bool | np.ndarray = True
                if self._p_inexact:
                    exact = np.fromiter((i not in self._p_inexact for i in ids.tolist()),
                                        dtype=bool, count=len(ids))
                    self._p_inexact.difference_update(ids.tolist())
                self._add_main(ids, self._p_vecs[alive].copy(), exact)
                for i in ids.tolist():
                    del self._p_rows[i]
            self._p_alive[head:stop] = False
            self._p_head = stop
            if self._p_head == self._p_tail:
                self._p_head = self._p_tail = 0

    def add(self, ids: np.ndarray, vectors: np.ndarray, seq: int | None = None) -> None:
        """Add vectors under int64 ids; an id already present (even tombstoned) is revived."""
        vi.single_thread()
        if self._memory is not None:
            self._memory.put(ids, vectors)
        with self.lock.write():
            fresh: list[int] = []
            waiting, was_due = len(self._p_rows), self._graph_due()
            found = self._lookup(ids)
            if self._rows_file is not None and (found >= 0).any():
                # a row revived or re-embedded keeps its graph place, with this exact vector
                self._file_rows(found[found >= 0], vectors[found >= 0])
            rows = found.tolist()
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
                self._add_main(ids[fresh], vectors[fresh], exact=True)
            elif fresh:
                self._append_pending(ids[fresh], vectors[fresh])
            if seq is not None:
                self.watermark = max(self.watermark, seq)
        if (fresh and self._indexer is not None and self._graph_due()
                and (waiting == 0 or not was_due or len(self._p_rows) >= vi.PENDING_CHUNK)):
            with self._cv:
                self._cv.notify_all()
                # backpressure: never let the exact buffer outgrow a cheap scan
                while len(self._p_rows) > vi.PENDING_MAX and self._indexer is not None:
                    self._cv.wait(timeout=1.0)

    def _append_pending(self, ids: np.ndarray, vectors: np.ndarray, exact: bool = True) -> None:
        """Append to the pending buffer (hold the write lock); ``exact`` False: the vectors are
        decoded ones (a rebuild's), never written to the exact vector file."""
        if not exact:
            self._p_inexact.update(ids.tolist())
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

"""The exact vectors of ``VectorIndex`` by HNSW row, in a file read with ``pread``.

A search rescores its candidates with their exact float32 vectors. From SQLite each costs a
B-tree seek through a small page cache; from a file of fixed-size records by row it costs one
``pread``, and the pages stay in the OS page cache, outside the daemon's resident memory (a
memory map would count them as the process's). The file is derived and private to the process:
an unlinked temporary file in the store directory, gone when the process ends, so a crash can
leave nothing stale behind. Rows are written as they join HNSW with the exact vectors ``add``
was given, the rest are filled from the store in the background (a store's warm waits for that
first fill); a row not written yet (or a file that failed) is read from the store as before.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from velesmem.store.sqlite.vector_state import VectorState

log = logging.getLogger(__name__)

FILL_CHUNK = 512  # rows filled from the store per read (the write lock is held while they are written)
# the fill takes the index's quiet moments: it waits until no search has started for this long
FILL_QUIET_S = 0.05


def available() -> bool:
    """Whether this platform reads into a buffer and writes at an offset (Linux, macOS 11+)."""
    return hasattr(os, "preadv") and hasattr(os, "pwrite")


class RowFile:
    """Fixed-size float32 records by row in an unlinked temporary file."""

    def __init__(self, directory: Path, dimension: int) -> None:
        self._fd = _unlinked_file(directory)
        self._size = dimension * 4
        self.dimension = dimension

    def write(self, row: int, vectors: np.ndarray) -> None:
        """Records ``row``, ``row + 1``, ... from ``vectors``; OSError when the disk refuses."""
        data = memoryview(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        offset = row * self._size
        while len(data):
            written = os.pwrite(self._fd, data, offset)
            if written <= 0:
                raise OSError("the exact vector file took no bytes")
            data, offset = data[written:], offset + written

    def read(self, rows: np.ndarray) -> np.ndarray:
        """The records of ``rows`` (each written before); OSError on a short read."""
        out = np.empty((len(rows), self.dimension), dtype=np.float32)
        size, fd = self._size, self._fd
        if not len(rows):
            return out
        view = memoryview(out).cast("B")  # type: ignore[arg-type]
        for j, row in enumerate(rows.tolist()):  # straight into ``out``
            if os.preadv(fd, [view[j * size:(j + 1) * size]], row * size) != size:
                raise OSError(f"the exact vector file ends before row {row}")
        return out

    def close(self) -> None:
        os.close(self._fd)


def _unlinked_file(directory: Path) -> int:
    """A new file in ``directory`` with no name (owner-only): gone with the last descriptor."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            return os.open(directory, flag | os.O_RDWR, 0o600)
        except OSError:  # a file system without unnamed files
            pass
    fd, name = tempfile.mkstemp(prefix=".exact-", suffix=".rows", dir=directory)
    os.unlink(name)
    return fd


class RowsPart(VectorState):
    """Keeping the exact vectors of the index's rows in a ``RowFile``, and reading them back."""

    def keep_exact_rows(self, directory: Path) -> None:
        """Keep the exact vectors by row in a file in ``directory`` from now on (filled in the
        background beside the indexer); without one, every exact read goes to the store."""
        if not available() or self._rows_file is not None:
            return
        try:
            rows_file = RowFile(directory, self.dimension)
        except OSError as exc:
            log.warning("exact vectors are read from the store (no file for them in %s: %s)",
                        directory, exc)
            return
        with self.lock.write():
            self._rows_file = rows_file
            self._filed = np.zeros(len(self._row_ids), dtype=bool)
        self._start_fill()

    def drop_exact_rows(self) -> None:
        """Stop the fill and close the file (the index reads the store from now on)."""
        self._stop_fill()
        with self.lock.write():
            rows_file, self._rows_file = self._rows_file, None
        if rows_file is not None:
            rows_file.close()

    @property
    def keeps_exact_rows(self) -> bool:
        """Whether exact vectors are read from the file (rows not written yet still come from
        the store)."""
        return self._rows_file is not None

    @property
    def filed_rows(self) -> int:
        """Live HNSW rows whose exact vector the file holds (0 without a file)."""
        with self.lock.read():
            if self._rows_file is None:
                return 0
            return int((self._filed[: self._n] & ~self._dead[: self._n]).sum())

    def exact_vectors(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact (ids, float32 vectors) of those of ``ids`` that have one, in any order:
        from the file for rows written there, from the store for the rest."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._rows_file is None or not len(ids):
            return self.source.fetch(ids)
        try:
            with self.lock.read():
                rows_file = self._rows_file
                if rows_file is None:
                    return self.source.fetch(ids)
                rows = self._lookup(ids)
                at = np.maximum(rows, 0)
                hit = (rows >= 0) & self._filed[at] & ~self._dead[at]
                vectors = rows_file.read(rows[hit])  # under the lock: a swap moves rows
        except OSError as exc:
            self._rows_failed(exc)
            return self.source.fetch(ids)
        if hit.all():
            return ids, vectors
        found, rest = self.source.fetch(ids[~hit])
        return np.concatenate([ids[hit], found]), np.vstack([vectors, rest])

    # --- writes (hold the write lock) ----------------------------------------------------------
    def _file_rows(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Write the exact ``vectors`` of ``rows`` (hold the write lock)."""
        rows_file = self._rows_file
        if rows_file is None or not len(rows):
            return
        try:
            if np.all(np.diff(rows) == 1):
                rows_file.write(int(rows[0]), vectors)
            else:
                for row, vector in zip(rows.tolist(), vectors):
                    rows_file.write(row, vector)
        except OSError as exc:
            self._filed[rows] = False
            self._rows_failed(exc, locked=True)
            return
        self._filed[rows] = True

    def _forget_filed(self) -> None:
        """Every row moved (a rebuild): none is written until filled again (hold the write
        lock)."""
        self._filed = np.zeros(len(self._row_ids), dtype=bool)
        self._fill_generation += 1

    def _rows_failed(self, exc: OSError, locked: bool = False) -> None:
        """Drop a file that failed a read or a write: exact vectors come from the store."""
        log.warning("exact vectors are read from the store from now on (their file failed: %s)",
                    exc)
        if locked:
            rows_file, self._rows_file = self._rows_file, None
        else:
            with self.lock.write():
                rows_file, self._rows_file = self._rows_file, None
        if rows_file is not None:
            rows_file.close()

    # --- the background fill -------------------------------------------------------------------
    def _start_fill(self) -> None:
        """Fill the rows not written yet, on a thread of the indexer's spawner (none: no fill,
        the store is read)."""
        with self._cv:
            spawner = self._spawner
            if (spawner is None or self._rows_file is None
                    or (self._filler is not None and self._filler.is_alive())):
                return
            self._fill_stop.clear()
            self._filler = spawner.thread("velesmem-vector-rows", self._fill_loop)

    def wait_filled(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Return once the background fill has written every row present (or stopped), so
        the searches that follow read the file from the first one: a fill started beside a
        stream of searches would otherwise wait for a quiet moment."""
        while not cancelled():
            filler = self._filler
            if filler is None or filler is threading.current_thread():
                return
            filler.join(FILL_QUIET_S)
            if not filler.is_alive():
                return

    def _stop_fill(self) -> None:
        filler = self._filler
        if filler is not None:
            self._fill_stop.set()
            if filler is not threading.current_thread():
                filler.join()
            self._filler = None

    def _fill_loop(self) -> None:
        """Write every live row not written yet, a chunk at a time in row order, from the
        store's exact vectors; a rebuild meanwhile (rows moved) starts it over."""
        try:
            start, seen = 0, -1
            while not self._fill_stop.is_set():
                quiet = time.monotonic() - self._last_search
                if quiet < FILL_QUIET_S:  # searches are running: they come first
                    self._fill_stop.wait(FILL_QUIET_S - quiet)
                    continue
                with self.lock.read():
                    if self._rows_file is None:
                        return
                    if seen != self._fill_generation:
                        start, seen = 0, self._fill_generation
                    n = self._n
                    rows = start + np.flatnonzero(~self._filed[start:n]
                                                  & ~self._dead[start:n])[:FILL_CHUNK]
                    ids = self._row_ids[rows].copy()
                if not len(rows):
                    return
                start = int(rows[-1]) + 1  # a row the store has no vector for is left to it
                found, vectors = self.source.fetch(ids)
                with self.lock.write():
                    if seen != self._fill_generation or self._rows_file is None:
                        continue
                    # rows never move within a generation; one ``add`` wrote meanwhile keeps
                    # the vector it was given
                    at = self._lookup(found)
                    keep = np.flatnonzero(at >= 0)
                    keep = keep[~self._filed[at[keep]]]
                    keep = keep[np.argsort(at[keep], kind="stable")]  # in row order: one write
                    self._file_rows(at[keep], vectors[keep])
        except Exception:  # the store still answers every exact read
            log.exception("filling the exact vector file failed; reading the store instead")
        finally:
            with self._cv:
                if self._filler is threading.current_thread():
                    self._filler = None


__all__ = ["FILL_CHUNK", "RowFile", "RowsPart", "available"]

"""Exact float32 vectors read back from SQLite, the truth the FAISS index is derived from.

The index keeps its vectors as 8-bit codes (a quarter of the memory); the scores a search
returns are exact inner products with the stored float32 vectors of its candidates. Reads come from a small
pool of read connections with a small page cache each: the candidates of one search are a few
dozen random rows, and the search threads are many, so a per-thread connection with the readers'
page cache would hold far more memory than these reads ever reuse.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import numpy as np

from velesmem.errors import Internal

MAX_BOUND_IDS = 4_096  # ids bound as parameters per statement (SQLite allows 32,766)


class StoredVectors:
    """``fetch(ids)`` → the stored (ids, float32 vectors) of one embedding space; ids without a
    stored vector (forgotten meanwhile) are left out."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], space: int,
                 dimension: int) -> None:
        self.space = space
        self.dimension = dimension
        self._connect = connect
        self._idle: list[sqlite3.Connection] = []
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def fetch(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The stored vectors of ``ids`` (int64), in no particular order."""
        keys = np.asarray(ids, dtype=np.int64).tolist()
        if not keys:
            return np.zeros(0, np.int64), np.zeros((0, self.dimension), np.float32)
        conn = self._take()
        try:
            rows: list[tuple[int, bytes]] = []
            for start in range(0, len(keys), MAX_BOUND_IDS):
                chunk = keys[start:start + MAX_BOUND_IDS]
                marks = ",".join("?" * len(chunk))
                rows += conn.execute(f"SELECT id, vector FROM space_vectors WHERE space = ? AND "
                                     f"id IN ({marks})", (self.space, *chunk)).fetchall()
        finally:
            self._give(conn)
        found = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), self.dimension)
        return found, matrix

    def _take(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise Internal("the store is closed")
            if self._idle:
                return self._idle.pop()
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        return conn

    def _give(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)

    def close(self) -> None:
        """Close every connection (the store closes)."""
        with self._lock:
            self._closed = True
            conns, self._all, self._idle = self._all, [], []
        for conn in conns:
            conn.close()


class MemoryVectors:
    """The exact vectors of an index with no store behind it (kept as given, by id)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._vectors: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def put(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        with self._lock:
            for i, v in zip(np.asarray(ids).tolist(), np.asarray(vectors, np.float32)):
                self._vectors[i] = v.copy()

    def fetch(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            keys = [i for i in np.asarray(ids, dtype=np.int64).tolist() if i in self._vectors]
            rows = [self._vectors[i] for i in keys]
        matrix = np.vstack(rows) if rows else np.zeros((0, self.dimension), np.float32)
        return np.asarray(keys, dtype=np.int64), matrix

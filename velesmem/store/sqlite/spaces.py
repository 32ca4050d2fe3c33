"""Embedding spaces in SQLite: their records, and bringing a space's FAISS index up to date.

A saved index carries the watermark it reflects: the highest write sequence applied to it.
Sequence numbers are never reused (``meta.seq_high``), so opening replays exactly what changed
since, from two index ranges: vectors written after the watermark (``space_vectors.seq``) and
the delete log (``vector_deletes``), which keeps every deletion the saved file may still hold a
vector for (a saved index keeps its tombstoned rows). Then the live count must equal the space's vector
count; if it does not (an index file from another copy of the store, a bug), the whole id set is
reconciled, and a missing, corrupt or foreign file is rebuilt from SQLite.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

from velesmem.store.rows import scalar
from velesmem.store.types import Identity, Space, WarmProgress
from velesmem.store.sqlite.vector_index import ExactSource, VectorIndex

REBUILD_BATCH = 8_192  # vectors read and added per step of a rebuild
log = logging.getLogger(__name__)


def read_space(conn: sqlite3.Connection, space_id: int) -> Space | None:
    row = conn.execute("SELECT id, model, dimension, witness FROM spaces WHERE id = ?",
                       (space_id,)).fetchone()
    if row is None:
        return None
    return Space(int(row[0]), Identity(row[1], int(row[2])), tuple(json.loads(row[3])))


def serving_space_id(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'serving_space'").fetchone()
    return int(row[0]) if row else None


def vector_count(conn: sqlite3.Connection, space: int) -> int:
    return int(scalar(conn.execute("SELECT count(*) FROM space_vectors WHERE space = ?",
                                   (space,))))


def seq_high(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'seq_high'").fetchone()
    stored = int(row[0]) if row else 0
    facts = int(scalar(conn.execute("SELECT coalesce(max(seq), 0) FROM facts")))
    return max(stored, facts)


def load_index(conn: sqlite3.Connection, directory: Path, space: Space, progress: WarmProgress,
               cancelled: Callable[[], bool] = lambda: False, *,
               source: ExactSource) -> VectorIndex:
    """The space's index, current with SQLite (see the module docstring); ``source`` gives it
    the exact vectors of its candidates."""
    dim, model = space.identity.dimension, space.identity.model
    high = seq_high(conn)
    index = VectorIndex.load(directory, dim, model, space.id, source)
    if index is not None and index.watermark > high:
        log.warning("the saved FAISS index of space %d is ahead of the store (watermark %d > %d): "
                    "rebuilding it", space.id, index.watermark, high)
        index = None
    if index is None:
        return rebuild(conn, space, progress, cancelled, source=source)
    progress.phase = "replaying the vector index"
    added = _replay_adds(conn, index, space, index.watermark)
    removed = _replay_deletes(conn, index, space, None)
    expected = vector_count(conn, space.id)
    if index.live_count != expected:
        log.warning("the FAISS index of space %d holds %d live vectors, the store %d: "
                    "reconciling every id", space.id, index.live_count, expected)
        reconcile(conn, index, space)
    index.watermark = high  # catch_up() replays what commits between here and serving
    if added or removed:
        log.info("FAISS index of space %d replayed: %d added, %d tombstoned", space.id, added,
                 removed)
    return index


def catch_up(conn: sqlite3.Connection, index: VectorIndex, space: Space) -> None:
    """Replay what committed since ``index.watermark`` (run inside the writer, so nothing
    commits meanwhile), then mark the index current."""
    high = seq_high(conn)
    if high > index.watermark:
        _replay_adds(conn, index, space, index.watermark)
        _replay_deletes(conn, index, space, index.watermark)
    index.watermark = high


def replay(conn: sqlite3.Connection, index: VectorIndex, space: Space) -> None:
    """Bring a just-loaded saved index up to date: vectors written after its watermark, and
    every logged deletion (the file may hold tombstoned rows)."""
    _replay_adds(conn, index, space, index.watermark)
    _replay_deletes(conn, index, space, None)
    index.watermark = seq_high(conn)


def _replay_adds(conn: sqlite3.Connection, index: VectorIndex, space: Space,
                 watermark: int) -> int:
    rows = conn.execute("SELECT id, vector FROM space_vectors WHERE space = ? AND seq > ? "
                        "ORDER BY seq", (space.id, watermark)).fetchall()
    if not rows:
        return 0
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
        len(rows), space.identity.dimension)
    index.bulk_add(ids, matrix)  # new ids
    index.add(ids, matrix)  # ids the index holds as tombstones come back to life
    return len(rows)


def _replay_deletes(conn: sqlite3.Connection, index: VectorIndex, space: Space,
                    watermark: int | None) -> int:
    """Tombstone the logged deletions (after ``watermark``, or all of them) of ids that have no
    vector now."""
    gone = [int(i) for (i,) in conn.execute(
        "SELECT DISTINCT d.id FROM vector_deletes d WHERE d.space = ? AND d.seq > ? AND NOT "
        "EXISTS (SELECT 1 FROM space_vectors v WHERE v.space = d.space AND v.id = d.id)",
        (space.id, -1 if watermark is None else watermark))]
    if gone:
        index.remove(gone)
    return len(gone)


def reconcile(conn: sqlite3.Connection, index: VectorIndex, space: Space) -> None:
    """Make the index hold exactly the space's vectors (a full id diff)."""
    in_db = np.fromiter((r[0] for r in conn.execute(
        "SELECT id FROM space_vectors WHERE space = ?", (space.id,))), dtype=np.int64)
    extra = np.setdiff1d(index.live_ids(), in_db, assume_unique=True)
    if len(extra):
        index.remove(extra.tolist())
    missing = set(np.setdiff1d(in_db, index.live_ids(), assume_unique=True).tolist())
    if missing:
        ids, blobs = [], []
        for key, blob in conn.execute("SELECT id, vector FROM space_vectors WHERE space = ?",
                                      (space.id,)):
            if key in missing:
                ids.append(key)
                blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(
            len(ids), space.identity.dimension)
        index.bulk_add(np.asarray(ids, dtype=np.int64), matrix)


def rebuild(conn: sqlite3.Connection, space: Space, progress: WarmProgress,
            cancelled: Callable[[], bool] = lambda: False, *,
            source: ExactSource) -> VectorIndex:
    """A new index of every vector of the space, added in batches (progress updated)."""
    dim = space.identity.dimension
    index = VectorIndex(dim, source=source)
    progress.phase = "rebuilding the vector index"
    progress.total = vector_count(conn, space.id)
    progress.done = 0
    cur = conn.execute("SELECT id, vector FROM space_vectors WHERE space = ? ORDER BY seq",
                       (space.id,))
    while not cancelled():
        rows = cur.fetchmany(REBUILD_BATCH)
        if not rows:
            break
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), dim)
        index.bulk_add(ids, matrix)
        progress.done += len(rows)
    if progress.done:  # an empty store has nothing to tell
        log.info("FAISS index of space %d rebuilt from %d vectors", space.id, progress.done)
    return index


def prune_deletes(conn: sqlite3.Connection, index: VectorIndex, space: Space) -> None:
    """After a save: forget the logged deletions the saved file holds no vector for (its
    watermark covers them, and it will not resurrect them)."""
    rows = conn.execute("SELECT rowid, id FROM vector_deletes WHERE space = ? AND seq <= ?",
                        (space.id, index.watermark)).fetchall()
    if not rows:
        return
    ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    held = np.isin(ids, index.row_ids())
    drop = [(r[0],) for r, keep in zip(rows, held) if not keep]
    conn.executemany("DELETE FROM vector_deletes WHERE rowid = ?", drop)

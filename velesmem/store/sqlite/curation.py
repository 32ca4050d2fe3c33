"""The curation cursor of a SQLite store: which embedded facts the curation lane has checked.

Every vector written to the serving space takes the write's sequence number, so "the facts still
to check" are the rows of ``space_vectors`` past a cursor (sequence, then id: one write can embed
many facts under one number), read in that order through the ``space_vectors_seq`` index. The
cursor lives in ``meta`` and moves in the transaction that writes the checks' edges, so a crash
loses no check: the lane resumes from the cursor at the next start.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np

from velesmem.store import rules
from velesmem.store.sqlite.part import in_query, metadata_from
from velesmem.store.sqlite.writer import Outcome
from velesmem.store.types import Uncurated

if TYPE_CHECKING:
    from velesmem.store.sqlite.backend import SqliteStore

CURSOR_KEY = "curated_through"  # "seq:id" of the last vector checked
LIVE = rules.live(rules.SQLITE, "f")


def start_cursor(conn: sqlite3.Connection) -> None:
    """Place the cursor past every vector already stored (migration 9: facts written before
    it were checked as they were written)."""
    row = conn.execute("SELECT seq, id FROM space_vectors ORDER BY seq DESC, id DESC "
                       "LIMIT 1").fetchone()
    cursor = "0:0" if row is None else f"{int(row[0])}:{int(row[1])}"
    conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (CURSOR_KEY, cursor))


def _last(conn: sqlite3.Connection, space: int) -> tuple[int, int]:
    row = conn.execute("SELECT seq, id FROM space_vectors WHERE space = ? ORDER BY seq DESC, "
                       "id DESC LIMIT 1", (space,)).fetchone()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


def uncurated_job(job: Any, space: int | None) -> Any:
    """``job`` (an import's restore) leaving what it writes unchecked when nothing was waiting
    for the lane before it: an import restores facts as they were (their own edges come with
    them), as the autograph stays off for it."""
    if space is None:
        return job

    def wrapped(conn: sqlite3.Connection) -> Any:
        caught_up = cursor(conn) >= _last(conn, space)
        out = job(conn)
        if caught_up:
            last = _last(conn, space)
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                         (CURSOR_KEY, f"{last[0]}:{last[1]}"))
        return out

    return wrapped


def cursor(conn: sqlite3.Connection) -> tuple[int, int]:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (CURSOR_KEY,)).fetchone()
    if row is None:
        return 0, 0
    seq, key = str(row[0]).split(":")
    return int(seq), int(key)


def uncurated(conn: sqlite3.Connection, space: int, limit: int, now: float) -> list[Uncurated]:
    """Up to ``limit`` live user facts whose vector in ``space`` was written past the cursor,
    in write order."""
    seq, key = cursor(conn)
    rows = conn.execute(
        "SELECT v.seq, v.id, v.vector, f.content, f.metadata, f.created_at "
        "FROM space_vectors v JOIN facts f ON f.id = v.id "
        f"WHERE v.space = ? AND v.seq >= ? AND (v.seq > ? OR +v.id > ?) AND f.kind IS NULL "
        f"AND {LIVE} ORDER BY v.seq, v.id LIMIT ?",
        (space, seq, seq, key, now, limit)).fetchall()
    return [Uncurated((int(s), int(k)), int(k), content, metadata_from(meta),
                      np.frombuffer(blob, dtype=np.float32), float(created))
            for s, k, blob, content, meta, created in rows]


def written_after(conn: sqlite3.Connection, space: int, keys: list[int],
                  through: tuple[int, int]) -> set[int]:
    """Those of ``keys`` whose vector in ``space`` lies past the cursor place ``through``."""
    seq, key = through
    # looked up by key: a condition on seq would let SQLite walk its seq index past the cursor,
    # every row of the backlog for each batch
    rows = in_query(conn, "SELECT id, seq FROM space_vectors WHERE id IN ({}) AND space = ?",
                    keys, (space,))
    return {int(k) for k, s in rows if (s, k) > (seq, key)}


def backlog(conn: sqlite3.Connection, space: int) -> int:
    """How many vectors of ``space`` lie past the cursor (facts forgotten since included)."""
    seq, key = cursor(conn)
    # two ranges of the (space, seq) index (an OR of them, or the id range, made SQLite walk the
    # primary key instead: a second at 100k facts)
    later = conn.execute("SELECT count(*) FROM space_vectors WHERE space = ? AND seq > ?",
                         (space, seq)).fetchone()[0]
    same = conn.execute("SELECT count(*) FROM space_vectors WHERE space = ? AND seq = ? AND +id > ?",
                        (space, seq, key)).fetchone()[0]
    return int(later) + int(same)


def curate(store: SqliteStore, edges: tuple[tuple[int, int, str], ...],
           through: tuple[int, int], now: float) -> Any:
    """The job writing the checks' edges (an edge whose end is gone is skipped) and moving the
    cursor to ``through`` (never back), in one transaction."""
    from velesmem.store.sqlite.writes import insert_edge, live_keys

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        live = live_keys(conn, sorted({k for e in edges for k in e[:2]}), now)
        written = 0
        for src, dst, relation in edges:
            if src in live and dst in live:
                insert_edge(conn, src, dst, relation, now)
                written += 1
        if through > cursor(conn):
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                         (CURSOR_KEY, f"{through[0]}:{through[1]}"))
        return Outcome(written)

    return job

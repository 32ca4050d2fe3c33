"""Facts stored before their embedder was ready: found (no vector in the serving space) and given
their vectors afterwards.

A write never waits for the embedding model: the fact (text + metadata) is the truth and is
acknowledged once durable; its vector is derived, like the FAISS index. The Runtime's warmer
reads the backlog in key order (``unembedded``) and hands the vectors back (``fill``), which
inserts each one only where the fact still exists and still has none, with a fresh write
sequence: a crash before the FAISS file is saved replays them like any other vector.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from velesmem.store import rules
from velesmem.store.sqlite.writer import Outcome
from velesmem.store.sqlite.writes import put_vector, record_provenance

if TYPE_CHECKING:
    from velesmem.store.sqlite.backend import SqliteStore

Job = Callable[[sqlite3.Connection], Outcome[Any]]


def unembedded(conn: sqlite3.Connection, space: int, after: int | None, limit: int,
               now: float) -> list[tuple[int, str]]:
    """(key, content) of up to ``limit`` live user facts with no vector in ``space``, with a key
    (int64) above ``after``, by key."""
    rows = conn.execute(
        f"SELECT f.id, f.content FROM facts f WHERE f.kind IS NULL AND "
        f"{rules.live(rules.SQLITE, 'f')} AND (? IS NULL OR f.id > ?) AND NOT EXISTS "
        "(SELECT 1 FROM space_vectors v WHERE v.space = ? AND v.id = f.id) ORDER BY f.id LIMIT ?",
        (now, after, after, space, limit)).fetchall()
    return [(int(k), c) for k, c in rows]


def fill(store: SqliteStore, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Job:
    """The job giving vectors of serving space ``space`` to the facts among ``items`` that still
    exist and still have none (nothing when another space serves by now); resolves to how many
    were written."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        serving = store.serving
        if serving is None or serving.id != space or not items:
            return Outcome(0)
        keys = [k for k, _ in items]
        marks = ",".join("?" * len(keys))
        wanted = {int(k) for (k,) in conn.execute(
            f"SELECT f.id FROM facts f WHERE f.id IN ({marks}) AND f.kind IS NULL AND NOT "
            "EXISTS (SELECT 1 FROM space_vectors v WHERE v.space = ? AND v.id = f.id)",
            (*keys, space))}
        chosen = [(k, np.asarray(v, dtype=np.float32)) for k, v in items if k in wanted]
        if not chosen:
            return Outcome(0)
        seq = store.next_seq()
        for key, vector in chosen:
            put_vector(conn, space, key, seq, vector.tobytes())
        if not store.provenance_recorded:
            record_provenance(conn, serving.identity.model, serving.identity.dimension)
        ids = np.asarray([k for k, _ in chosen], dtype=np.int64)
        matrix = np.stack([v for _, v in chosen])

        def effect() -> None:
            store.provenance_recorded = True
            index = store.index
            if index is not None:  # else the warm-up's catch-up replays them (seq > watermark)
                index.add(ids, matrix, seq)

        return Outcome(len(chosen), effect)

    return job

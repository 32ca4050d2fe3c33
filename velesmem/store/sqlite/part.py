"""What the parts of ``SqliteStore`` share: its state, its two doors, and row helpers.

``SqliteStore`` is composed of parts by operation (reads, search, migration, jobs; the class
itself keeps opening, warming, closing, the serving space, writes and integrity), the way
Radicale composes a collection. Each part reads the state declared here, which
``SqliteStore.__init__`` sets, and reaches SQLite only through ``reader()`` (a per-thread
read connection) and ``_submit`` (a job for the single writer).
"""

from __future__ import annotations

import json
import sqlite3
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from velesmem.store import rules
from velesmem.store.rows import scalar
from velesmem.store.types import Space, StoredFact

if TYPE_CHECKING:
    from velesmem.spawner import Spawner
    from velesmem.store.sqlite.exact import StoredVectors
    from velesmem.store.sqlite.text import TextIndex
    from velesmem.store.sqlite.vector_index import VectorIndex
    from velesmem.store.sqlite.writer import Job

MAX_BOUND_IDS = 4_096  # ids bound as parameters (SQLite allows 32,766)
LIVE = rules.live(rules.SQLITE)
I64_MIN = -(1 << 63)
FACT_COLUMNS = ("id, content, metadata, kind, confidence, successes, failures, created_at, "
                "updated_at, expires_at")


class StorePart:
    """The state every part of ``SqliteStore`` reads (set by ``SqliteStore.__init__``)."""

    directory: Path
    db_path: Path
    readonly: bool
    serving: Space | None
    index: VectorIndex | None
    building_index: VectorIndex | None
    text: TextIndex
    seq: int
    _write_conn: sqlite3.Connection
    _journal_epoch: str | None
    _journal_max: int
    _journal_bytes: int
    _spawner: Spawner | None  # the Runtime's (from start()): it runs the indexer threads

    if TYPE_CHECKING:
        def reader(self) -> sqlite3.Connection: ...

        def next_seq(self) -> int: ...

        def vector_source(self, space: Space) -> StoredVectors: ...

        def _submit(self, job: Job, *, background: bool = False) -> Future[Any]: ...


def metadata_from(text: str) -> dict[str, Any]:
    """A stored metadata column as a dict; most facts have none, read without a parse."""
    if text == "{}":
        return {}
    out: dict[str, Any] = json.loads(text)
    return out


def fact_from_row(row: tuple[Any, ...]) -> StoredFact:
    """A ``StoredFact`` from a row of ``FACT_COLUMNS``."""
    return StoredFact(int(row[0]), row[1], metadata_from(row[2]), row[3], float(row[4]),
                      int(row[5]), int(row[6]), float(row[7]), float(row[8]),
                      None if row[9] is None else float(row[9]))


def in_query(conn: sqlite3.Connection, sql: str, keys: list[int],
             params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Run ``sql`` whose ``{}`` is an id list, binding the ids (or one JSON array when many)."""
    if len(keys) > MAX_BOUND_IDS:
        return conn.execute(sql.format("SELECT value FROM json_each(?)"),
                            (json.dumps(keys), *params)).fetchall()
    return conn.execute(sql.format(",".join("?" * len(keys))), (*keys, *params)).fetchall()


def journal_bytes(conn: sqlite3.Connection) -> int:
    """What the migration journal's entries count against its cap."""
    return int(scalar(conn.execute("SELECT coalesce(sum(bytes), 0) FROM migration_journal")))

"""The SQLite schema as registered, named migrations.

Each migration runs in the same transaction as the row recording it in ``schema_migrations``,
so a crash leaves either both or neither. A database newer than this code is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from velesmem.errors import Internal
from velesmem.store.meta_index import CREATE_SQL, INDEX_ALL_SQL


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, script: str) -> None:
    # Statement by statement: executescript() would COMMIT the open migration transaction.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v1_initial(conn: sqlite3.Connection) -> None:
    _run(conn, """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE facts (
            id          INTEGER PRIMARY KEY,      -- u64 id as the int64 with the same bits
            content     TEXT NOT NULL,
            metadata    TEXT NOT NULL,            -- JSON object
            kind        TEXT,                     -- NULL = user fact, else internal scaffolding
            vector      BLOB,                     -- float32 embedding (NULL for internal facts)
            seq         INTEGER NOT NULL,         -- write sequence: the FAISS watermark
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL,
            expires_at  REAL,                     -- absolute epoch seconds, NULL = permanent
            confidence  REAL NOT NULL DEFAULT 0.5,
            successes   INTEGER NOT NULL DEFAULT 0,
            failures    INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX facts_expiry ON facts(expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX facts_kind ON facts(kind, seq) WHERE kind IS NOT NULL;
        CREATE TABLE edges (
            id          INTEGER PRIMARY KEY,
            src         INTEGER NOT NULL,
            dst         INTEGER NOT NULL,
            relation    TEXT NOT NULL,
            created_at  REAL NOT NULL
        );
        CREATE INDEX edges_src ON edges(src, id);
        CREATE INDEX edges_dst ON edges(dst);
        CREATE VIRTUAL TABLE facts_fts USING fts5(
            content, content='facts', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
    """)


def _v2_vectors_apart(conn: sqlite3.Connection) -> None:
    # Vectors in their own table keep fact rows small, so metadata filters scan less.
    _run(conn, """
        CREATE TABLE vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
        INSERT INTO vectors (id, vector) SELECT id, vector FROM facts WHERE vector IS NOT NULL;
        ALTER TABLE facts DROP COLUMN vector
    """)


def _v3_metadata_index(conn: sqlite3.Connection) -> None:
    # The indexed side table behind metadata filters (velesmem/store/meta_index.py), filled for
    # the facts already stored.
    _run(conn, CREATE_SQL)
    conn.execute(INDEX_ALL_SQL)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial: facts, edges, meta, FTS5 over user facts", _v1_initial),
    Migration(2, "vectors moved to their own table", _v2_vectors_apart),
    Migration(3, "fact_meta: (key, type, value, id) index of top-level metadata",
              _v3_metadata_index),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def current_version(conn: sqlite3.Connection) -> int:
    """The highest applied migration (0 for a fresh database)."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                 "name TEXT NOT NULL, applied_at REAL NOT NULL)")
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, now: float,
            migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply each pending migration with its record in one transaction; return the version."""
    version = current_version(conn)
    latest = migrations[-1].version
    if version > latest:
        raise Internal(f"store schema version {version} is newer than this velesmem understands "
                       f"({latest}): upgrade velesmem")
    for mig in migrations:
        if mig.version <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            mig.apply(conn)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                         (mig.version, mig.name, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        version = mig.version
    return version

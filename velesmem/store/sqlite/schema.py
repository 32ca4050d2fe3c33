"""The SQLite schema as registered, named migrations.

Each migration runs in the same transaction as the row recording it in ``schema_migrations``,
so a crash leaves either both or neither. A database newer than this code is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from velesmem.errors import Internal
from velesmem.store.sqlite.meta_index import CREATE_SQL, INDEX_ALL_SQL


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


def _v4_embedding_spaces(conn: sqlite3.Connection) -> None:
    # Vectors keyed by embedding space, each with the sequence number it was written at, so the
    # FAISS index of a space replays what it lacks from an index range instead of a full scan;
    # deletions since a saved index are logged for the same reason. ``seq_high`` keeps the
    # highest sequence ever handed out: numbers are never reused, even after a forget.
    _run(conn, """
        CREATE TABLE spaces (
            id          INTEGER PRIMARY KEY,
            model       TEXT NOT NULL,
            dimension   INTEGER NOT NULL,
            witness     TEXT NOT NULL DEFAULT '[]',  -- JSON: the embedder's vector of a probe
            state       TEXT NOT NULL,               -- serving, building
            created_at  REAL NOT NULL
        );
        CREATE TABLE space_vectors (
            space   INTEGER NOT NULL,
            id      INTEGER NOT NULL,
            seq     INTEGER NOT NULL,
            vector  BLOB NOT NULL,
            PRIMARY KEY (space, id)
        );
        CREATE INDEX space_vectors_seq ON space_vectors(space, seq);
        CREATE TABLE vector_deletes (
            space   INTEGER NOT NULL,
            id      INTEGER NOT NULL,
            seq     INTEGER NOT NULL
        );
        CREATE INDEX vector_deletes_seq ON vector_deletes(space, seq)
    """)
    row = conn.execute("SELECT value FROM meta WHERE key = 'provenance_model'").fetchone()
    dim = conn.execute("SELECT value FROM meta WHERE key = 'provenance_dimension'").fetchone()
    if row is None:
        blob = conn.execute("SELECT vector FROM vectors LIMIT 1").fetchone()
        model, dimension = "", (len(blob[0]) // 4 if blob else 0)
    else:
        model, dimension = row[0], int(dim[0])
    if dimension:
        conn.execute("INSERT INTO spaces (id, model, dimension, state, created_at) "
                     "VALUES (1, ?, ?, 'serving', 0)", (model, dimension))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('serving_space', '1')")
    conn.execute("INSERT INTO space_vectors (space, id, seq, vector) SELECT 1, v.id, f.seq, "
                 "v.vector FROM vectors v JOIN facts f ON f.id = v.id")
    conn.execute("DROP TABLE vectors")
    conn.execute("INSERT OR REPLACE INTO meta SELECT 'seq_high', coalesce(max(seq), 0) FROM facts")


def _v5_jobs(conn: sqlite3.Connection) -> None:
    # Durable background jobs (extraction, migration): accepted work survives a crash.
    _run(conn, """
        CREATE TABLE jobs (
            id          TEXT PRIMARY KEY,
            kind        TEXT NOT NULL,
            state       TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            payload     TEXT,            -- JSON, dropped when the job ends
            output      TEXT,            -- JSON, persisted before the job's memory writes
            result      TEXT,            -- JSON
            error       TEXT,
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL
        );
        CREATE INDEX jobs_state ON jobs(kind, state, created_at)
    """)


def _v6_migration_journal(conn: sqlite3.Connection) -> None:
    # What changed while an embedding migration copies the store into a second space: one row
    # per write to a fact (or to the edges leaving it), replayed into the new space until it
    # converges. Bounded in bytes by the migration's journal_max_bytes.
    _run(conn, """
        CREATE TABLE migration_journal (
            seq     INTEGER PRIMARY KEY AUTOINCREMENT,
            epoch   TEXT NOT NULL,
            key     INTEGER NOT NULL,
            bytes   INTEGER NOT NULL
        )
    """)


def _v7_auth_tokens(conn: sqlite3.Connection) -> None:
    # Bearer tokens the daemon accepts (velesmem/daemon/auth.py): the SHA-256 of each token,
    # never the token itself. At most one live token per name; revoked ones stay, for the audit.
    _run(conn, """
        CREATE TABLE auth_tokens (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            name        TEXT NOT NULL,
            digest      TEXT NOT NULL UNIQUE,
            created_at  REAL NOT NULL,
            revoked_at  REAL
        );
        CREATE UNIQUE INDEX auth_tokens_live_name ON auth_tokens(name) WHERE revoked_at IS NULL
    """)


def _v8_confidence_events(conn: sqlite3.Connection) -> None:
    # Each change of a user fact's confidence (feedback, a consolidation's decay and its undo),
    # written in the transaction of the change; the newest few per fact are kept, and forget
    # deletes them with the fact.
    _run(conn, """
        CREATE TABLE confidence_events (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,  -- recording order
            fact        INTEGER NOT NULL,
            at          REAL NOT NULL,
            confidence  REAL NOT NULL,                      -- the value it moved to
            cause       TEXT NOT NULL                       -- helpful, not_helpful, decay, ...
        );
        CREATE INDEX confidence_events_fact ON confidence_events(fact, id)
    """)


def _v9_curation_cursor(conn: sqlite3.Connection) -> None:
    # Where the curation lane (velesmem/memory/curate.py) resumes: past every fact already
    # stored, which was checked for duplicates and updates before its write.
    from velesmem.store.sqlite.curation import start_cursor

    start_cursor(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial: facts, edges, meta, FTS5 over user facts", _v1_initial),
    Migration(2, "vectors moved to their own table", _v2_vectors_apart),
    Migration(3, "fact_meta: (key, type, value, id) index of top-level metadata",
              _v3_metadata_index),
    Migration(4, "embedding spaces: vectors keyed by space with their write sequence",
              _v4_embedding_spaces),
    Migration(5, "jobs: durable background work", _v5_jobs),
    Migration(6, "migration_journal: writes made while an embedding migration runs",
              _v6_migration_journal),
    Migration(7, "auth_tokens: hashed bearer tokens, one live token per name", _v7_auth_tokens),
    Migration(8, "confidence_events: each fact's recent confidence changes and their cause",
              _v8_confidence_events),
    Migration(9, "curation cursor: facts checked for duplicates and updates after their write",
              _v9_curation_cursor),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                 "name TEXT NOT NULL, applied_at REAL NOT NULL)")
    return {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}


def current_version(conn: sqlite3.Connection) -> int:
    """The highest applied migration (0 for a fresh database)."""
    return max(applied_versions(conn), default=0)


def migrate(conn: sqlite3.Connection, now: float,
            migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply each migration not yet recorded, in order, each with its record in one
    transaction; return the version. A database newer than this code is refused."""
    applied = applied_versions(conn)
    latest = migrations[-1].version
    if applied and max(applied) > latest:
        raise Internal(f"store schema version {max(applied)} is newer than this velesmem "
                       f"understands ({latest}): upgrade velesmem")
    for mig in migrations:
        if mig.version in applied:
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
    return current_version(conn)

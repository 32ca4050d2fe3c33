"""The PostgreSQL schema as registered, named migrations.

Each migration runs in one transaction with the row recording it in ``schema_migrations``, under
a transaction-scoped advisory lock: two daemons starting on a fresh database at once apply each
migration exactly once (the second waits, then finds it recorded). A database newer than this
code is refused. The ``vector`` extension is created first when the role may; on a managed
server an administrator enables it once (docs/team.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from velesmem.errors import Internal
from velesmem.store.types import JOURNAL_ENTRY_BYTES

MIGRATION_LOCK = 0x76656C65_73000001  # pg advisory lock key: "veles" + 1
Conn = psycopg.Connection[Any]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Conn], None]


def _run(conn: Conn, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v1_initial(conn: Conn) -> None:
    _run(conn, """
        CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
        CREATE SEQUENCE fact_seq;
        CREATE TABLE facts (
            id          bigint PRIMARY KEY,        -- u64 id as the int64 with the same bits
            content     text NOT NULL,
            metadata    jsonb NOT NULL,            -- a JSON object
            kind        text,                      -- NULL = user fact, else internal scaffolding
            seq         bigint NOT NULL DEFAULT nextval('fact_seq'),  -- write order
            created_at  double precision NOT NULL,
            updated_at  double precision NOT NULL,
            expires_at  double precision,          -- absolute epoch seconds, NULL = permanent
            confidence  double precision NOT NULL DEFAULT 0.5,
            successes   integer NOT NULL DEFAULT 0,
            failures    integer NOT NULL DEFAULT 0
        );
        CREATE INDEX facts_expiry ON facts (expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX facts_kind ON facts (kind, seq) WHERE kind IS NOT NULL;
        CREATE TABLE edges (
            id          bigint PRIMARY KEY,
            src         bigint NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            dst         bigint NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            relation    text NOT NULL,
            created_at  double precision NOT NULL
        );
        CREATE INDEX edges_src ON edges (src, id);
        CREATE INDEX edges_dst ON edges (dst, id);
        CREATE TABLE spaces (
            id          serial PRIMARY KEY,
            model       text NOT NULL,
            dimension   integer NOT NULL,
            witness     jsonb NOT NULL DEFAULT '[]',
            state       text NOT NULL,             -- serving, building
            created_at  double precision NOT NULL
        )
    """)


def _v2_text_postings(conn: Conn) -> None:
    # The text index: the lexemes PostgreSQL's full-text parser and stemmer make of each user
    # fact (to_tsvector), one row per (lexeme, fact) with its term frequency and the fact's
    # length, so BM25 reads one index range per query word (velesmem/store/postgres/text.py);
    # text_stats holds the corpus totals BM25 needs, in shards so writers never queue on one row.
    _run(conn, """
        CREATE TABLE fact_terms (
            lexeme  text COLLATE "C" NOT NULL,
            id      bigint NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            tf      integer NOT NULL,
            dl      integer NOT NULL,
            PRIMARY KEY (lexeme, id)
        );
        CREATE INDEX fact_terms_id ON fact_terms (id);
        CREATE TABLE text_stats (shard integer PRIMARY KEY, docs bigint NOT NULL,
                                 tokens bigint NOT NULL);
        ALTER TABLE facts ADD COLUMN ntokens integer NOT NULL DEFAULT 0
    """)


def _v3_metadata_index(conn: Conn) -> None:
    # Top-level metadata as typed rows (velesmem/store/postgres/meta_index.py): every predicate
    # is an index range, numbers compare as numeric, strings by code point (COLLATE "C").
    _run(conn, """
        CREATE TABLE fact_meta (
            id    bigint NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            key   text COLLATE "C" NOT NULL,
            type  text NOT NULL,              -- null, true, false, number, text, array, object
            num   numeric,                    -- type number
            str   text COLLATE "C",           -- type text
            js    jsonb,                      -- type array / object
            PRIMARY KEY (id, key)
        );
        CREATE INDEX fact_meta_num ON fact_meta (key, num, id) WHERE type = 'number';
        CREATE INDEX fact_meta_str ON fact_meta (key, str, id) WHERE type = 'text';
        CREATE INDEX fact_meta_type ON fact_meta (key, type, id)
    """)


def _v4_jobs(conn: Conn) -> None:
    # Durable background work (extraction, migration). A running job is held by the daemon
    # that claimed it through a session advisory lock (velesmem/store/postgres/jobs.py), which
    # vanishes with that daemon, so another one may take the job over.
    _run(conn, """
        CREATE TABLE jobs (
            id          text PRIMARY KEY,
            kind        text NOT NULL,
            state       text NOT NULL,           -- accepted, running, committed, failed
            fingerprint text NOT NULL,
            payload     jsonb,                   -- dropped when the job ends
            output      text,                    -- persisted before the job's memory writes
            result      jsonb,
            error       text,
            claimed_by  text,                    -- the daemon that last claimed it
            attempts    integer NOT NULL DEFAULT 0,
            created_at  double precision NOT NULL,
            updated_at  double precision NOT NULL
        );
        CREATE INDEX jobs_state ON jobs (kind, state, created_at)
    """)


JOURNAL_FULL = "VJ001"  # the SQLSTATE the journal trigger raises when a write would overflow it
_JOURNAL_FUNCTION = f"""
    CREATE FUNCTION velesmem_journal() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
        ep text;
        cap bigint;
        used bigint;
    BEGIN
        SELECT value INTO ep FROM meta WHERE key = 'journal_epoch';
        IF ep IS NULL THEN
            RETURN NULL;
        END IF;
        SELECT value::bigint INTO cap FROM meta WHERE key = 'journal_max_bytes';
        UPDATE meta SET value = (value::bigint + {JOURNAL_ENTRY_BYTES})::text WHERE key = 'journal_bytes'
            RETURNING value::bigint INTO used;
        IF used IS NULL THEN
            used := {JOURNAL_ENTRY_BYTES};
            INSERT INTO meta VALUES ('journal_bytes', used::text);
        END IF;
        IF used > cap THEN
            RAISE EXCEPTION USING ERRCODE = '{JOURNAL_FULL}',
                MESSAGE = format('the embedding migration''s journal is full (%s of %s bytes, '
                                 'journal_max_bytes): this write was refused so that nothing '
                                 'goes untracked. Retry in a moment (the migration replays the '
                                 'journal as it goes), or cancel it with migration_cancel',
                                 used - {JOURNAL_ENTRY_BYTES}, cap);
        END IF;
        INSERT INTO migration_journal (epoch, key, bytes)
            VALUES (ep, CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END, {JOURNAL_ENTRY_BYTES});
        RETURN NULL;
    END
    $fn$"""


SPACE_RETIRED = "VS001"  # the SQLSTATE a write into a retired embedding space gets
_SPACE_GUARD_FUNCTION = f"""
    CREATE FUNCTION velesmem_space_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        IF (SELECT state FROM spaces WHERE id = TG_ARGV[0]::integer) = 'retired' THEN
            RAISE EXCEPTION USING ERRCODE = '{SPACE_RETIRED}',
                MESSAGE = format('this daemon still embeds into space %s, which a migration '
                                 'retired (another daemon moved the store to a new embedder): '
                                 'restart this daemon so it serves with the new one',
                                 TG_ARGV[0]);
        END IF;
        RETURN NEW;
    END
    $fn$"""


def _v5_migration_journal(conn: Conn) -> None:
    # What changed while an embedding migration copies the store into a second space: a row
    # per user fact whose vector must be (re)made or dropped — inserted, its text changed, or
    # deleted. Written by triggers, so every daemon on the database journals its writes in the
    # writes' own transactions, bounded in bytes by the migration's journal_max_bytes.
    _run(conn, """
        CREATE TABLE migration_journal (
            seq     bigserial PRIMARY KEY,
            epoch   text NOT NULL,
            key     bigint NOT NULL,
            bytes   integer NOT NULL
        )
    """)
    conn.execute(_JOURNAL_FUNCTION)
    # A daemon that missed a migration another daemon committed must not keep writing vectors
    # into the retired space: each space's table refuses them (spaces.create_table).
    conn.execute(_SPACE_GUARD_FUNCTION)
    _run(conn, """
        CREATE TRIGGER facts_journal_insert AFTER INSERT ON facts FOR EACH ROW
            WHEN (NEW.kind IS NULL) EXECUTE FUNCTION velesmem_journal();
        CREATE TRIGGER facts_journal_update AFTER UPDATE OF content ON facts FOR EACH ROW
            WHEN (NEW.kind IS NULL AND OLD.content IS DISTINCT FROM NEW.content)
            EXECUTE FUNCTION velesmem_journal();
        CREATE TRIGGER facts_journal_delete AFTER DELETE ON facts FOR EACH ROW
            WHEN (OLD.kind IS NULL) EXECUTE FUNCTION velesmem_journal()
    """)


def _v6_auth_tokens(conn: Conn) -> None:
    # Bearer tokens the daemons accept (velesmem/daemon/auth.py): the SHA-256 of each token,
    # never the token itself. At most one live token per name; revoked ones stay, for the audit.
    _run(conn, """
        CREATE TABLE auth_tokens (
            id          bigserial PRIMARY KEY,
            name        text NOT NULL,
            digest      text NOT NULL UNIQUE,
            created_at  double precision NOT NULL,
            revoked_at  double precision
        );
        CREATE UNIQUE INDEX auth_tokens_live_name ON auth_tokens (name) WHERE revoked_at IS NULL
    """)


def _v7_confidence_events(conn: Conn) -> None:
    # Each change of a user fact's confidence (feedback, a consolidation's decay and its undo),
    # written in the transaction of the change; the newest few per fact are kept, and deleting
    # the fact deletes them (as its edges).
    _run(conn, """
        CREATE TABLE confidence_events (
            id          bigserial PRIMARY KEY,               -- recording order
            fact        bigint NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            at          double precision NOT NULL,
            confidence  double precision NOT NULL,           -- the value it moved to
            cause       text NOT NULL                        -- helpful, not_helpful, decay, ...
        );
        CREATE INDEX confidence_events_fact ON confidence_events (fact, id)
    """)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial: facts, edges, meta, embedding spaces", _v1_initial),
    Migration(2, "fact_terms: full-text postings (lexeme, fact, tf, length) and corpus totals "
                 "for BM25",
              _v2_text_postings),
    Migration(3, "fact_meta: typed rows of top-level metadata", _v3_metadata_index),
    Migration(4, "jobs: durable background work, claimed by one daemon", _v4_jobs),
    Migration(5, "migration_journal: writes made while an embedding migration runs (triggers)",
              _v5_migration_journal),
    Migration(6, "auth_tokens: bearer tokens, stored hashed", _v6_auth_tokens),
    Migration(7, "confidence_events: each fact's recent confidence changes and their cause",
              _v7_confidence_events),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def ensure_extension(conn: Conn, location: str) -> None:
    """Create the ``vector`` extension if missing; a worded error when the role may not."""
    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is not None:
        return
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise Internal(
            f"the PostgreSQL database {location} lacks the pgvector extension and this role "
            f"cannot create it ({str(exc).strip().splitlines()[0]}): have an administrator run "
            "`CREATE EXTENSION vector;` in that database once (managed services list it as "
            "'vector' or 'pgvector')") from None


def _ensure_table(conn: Conn) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                 "name text NOT NULL, applied_at double precision NOT NULL)")


def applied_versions(conn: Conn) -> set[int]:
    row = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
    if row is None or row[0] is None:
        return set()
    return {int(v) for (v,) in conn.execute("SELECT version FROM schema_migrations")}


def current_version(conn: Conn) -> int:
    """The highest applied migration (0 for a fresh database)."""
    return max(applied_versions(conn), default=0)


def migrate(conn: Conn, now: float, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply each migration not yet recorded, in order, each with its record in one
    transaction under the migration lock; return the version."""
    latest = migrations[-1].version
    for mig in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            _ensure_table(conn)
            applied = applied_versions(conn)
            if applied and max(applied) > latest:
                raise Internal(f"store schema version {max(applied)} is newer than this "
                               f"velesmem understands ({latest}): upgrade velesmem")
            if mig.version in applied:
                continue
            mig.apply(conn)
            conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                         (mig.version, mig.name, now))
    return current_version(conn)

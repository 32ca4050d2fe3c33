"""The PostgreSQL backend: many daemons, one database (``VELESDB_MEMORY_BACKEND=postgres``).

Opening (fast, before the daemon serves): one connection creates the ``vector`` extension if
needed, applies pending migrations and settles the serving embedding space, each under an
advisory lock so daemons starting together agree. There is no process lock: atomicity comes
from transactions (``writes``), work that must run once takes an advisory lock (the TTL sweep)
or a ``SKIP LOCKED`` claim (``jobs``). ``start()`` opens the connection pool and the small
thread pool that runs writes, one transaction each; a write's future resolves after its commit,
so an acknowledged write survives any daemon's death. Vectors live in pgvector HNSW indexes
that PostgreSQL keeps current, so warming has nothing to load.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import psycopg
from psycopg import errors as pgerrors
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from velesmem.errors import Internal, InvalidInput, SpaceMoved, StoreUnreachable, VelesmemError
from velesmem.ids import to_i64
from velesmem.spawner import Spawner
from velesmem.store import rules
from velesmem.store.postgres import jobs, meta_index, spaces, watch, writes
from velesmem.store.postgres.connection import (
    APPLICATION,
    CONNECT_TIMEOUT_S,
    TCP_OPTIONS,
    Keys,
    configure,
    connect,
    failed,
    redact,
    unreachable,
)
from velesmem.store.postgres.predicates import compile_predicate, matched
from velesmem.store.postgres.schema import (
    JOURNAL_FULL,
    MIGRATION_LOCK,
    SPACE_RETIRED,
    ensure_extension,
    migrate,
)
from velesmem.store.postgres.text import TextIndex
from velesmem.store.predicates import Predicate
from velesmem.store.rows import one, scalar
from velesmem.store.scoring import top_scored
from velesmem.store.types import (
    ConfidenceEvent,
    Counts,
    Edge,
    FactWrite,
    GraphWrite,
    Identity,
    Job,
    JournalState,
    Problem,
    RestoreWrite,
    Space,
    StoredFact,
    TokenRecord,
    WarmProgress,
)

if TYPE_CHECKING:
    from velesmem.config import Settings

POOL_MIN = 1
POOL_MAX = 12  # per daemon: the write threads plus concurrent readers
POOL_TIMEOUT_S = 30.0
WRITE_THREADS = 4
WRITE_RETRIES = 5  # a serialization failure or deadlock is retried this many times
RETRY_BASE_S = 0.005
SWEEP_LOCK = 0x76656C65_73000002  # the TTL sweep runs in one daemon at a time
EXPORT_BATCH = 2_000
LIVE = rules.live(rules.POSTGRES)
_I64_MIN = -(1 << 63)
_RETRYABLE = (pgerrors.SerializationFailure, pgerrors.DeadlockDetected)
_FACT_COLUMNS = ("id, content, metadata, kind, confidence, successes, failures, created_at, "
                 "updated_at, expires_at")
log = logging.getLogger(__name__)
T = TypeVar("T")


class _Conflict(Internal):
    """A transaction PostgreSQL aborted for a concurrent one (serialization, deadlock): it
    changed nothing and is retried."""


_TOKEN_COLUMNS = "name, digest, created_at, revoked_at"


def _token(row: tuple[Any, ...]) -> TokenRecord:
    return TokenRecord(row[0], row[1], float(row[2]), None if row[3] is None else float(row[3]))


def _lost(exc: psycopg.Error) -> bool:
    """The connection failed or the server went away (no SQL state, class 08, or 57P)."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith(("08", "57P"))


_UNDEFINED_TABLE = "42P01"
_DATA_EXCEPTION = "22000"  # pgvector: "expected N dimensions, not M"


def _moved(exc: psycopg.Error) -> bool:
    """The statement met a space another daemon's migration retired, dropped or replaced."""
    message = str(exc)
    return (exc.sqlstate == SPACE_RETIRED
            or (exc.sqlstate == _UNDEFINED_TABLE and "space_vectors_" in message)
            or (exc.sqlstate == _DATA_EXCEPTION and "dimensions, not" in message))


def _fact(row: tuple[Any, ...]) -> StoredFact:
    return StoredFact(int(row[0]), row[1], row[2], row[3], float(row[4]), int(row[5]),
                      int(row[6]), float(row[7]), float(row[8]),
                      None if row[9] is None else float(row[9]))


def _done(value: T) -> Future[T]:
    future: Future[T] = Future()
    future.set_result(value)
    return future


def _failed_future(exc: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


class PostgresStore:
    """An open PostgreSQL store (see the module docstring). Implements ``Store``."""

    backend = "postgres"

    def __init__(self, url: str, conn: psycopg.Connection[Any], serving: Space | None) -> None:
        self.url = url
        self.location = redact(url)
        self.serving = serving
        self._direct = conn  # opening, and every call made before start()
        self._direct_lock = threading.RLock()
        self._pool: ConnectionPool[Any] | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._background: ThreadPoolExecutor | None = None  # autograph: one at a time
        self._closing = False  # no new writes; those queued still run
        self._closed = False
        self._state_lock = threading.Lock()
        self.text = TextIndex()
        self.provenance_recorded = spaces.read_provenance(conn) is not None
        self.expiry_listener: Callable[[float], None] | None = None
        self._next_expiry: float | None = None
        self.warm_done = False
        self.worker = f"{APPLICATION}-{random.getrandbits(48):012x}"  # this process's claims
        self.leases = jobs.Leases(url)
        self.liveness = watch.Liveness(url)

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, spawner: Spawner) -> None:
        """Open the connection pool and the write threads, from ``spawner`` (idempotent)."""
        with self._state_lock:
            if self._closing or self._pool is not None:
                return
            pool: ConnectionPool[Any] = ConnectionPool(
                self.url, min_size=POOL_MIN, max_size=POOL_MAX, open=False, name=APPLICATION,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                        "application_name": APPLICATION, **TCP_OPTIONS},
                configure=configure, timeout=POOL_TIMEOUT_S)
            try:
                pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
            except PoolTimeout as exc:
                pool.close()
                raise StoreUnreachable(self.liveness.down(exc)) from None
            self._pool = pool
            self._writer = spawner.pool(WRITE_THREADS, "velesmem-pgwrite")
            self._background = spawner.pool(1, "velesmem-pgbackground")
        with self._direct_lock:  # from now on every call takes a pooled connection
            self._direct.close()

    def refresh_pool(self) -> None:
        """Replace the pooled connections an outage killed (after the server answers again)."""
        pool = self._pool
        if pool is not None and not self._closing:
            try:
                pool.check()
            except psycopg.Error as exc:
                log.warning("checking the pooled connections failed: %s", exc)

    @property
    def down_reason(self) -> str | None:
        """Why PostgreSQL cannot be reached right now (None while it answers)."""
        return self.liveness.error

    def watch(self, stop: threading.Event, on_serving: Callable[[int], None]) -> None:
        """Follow the database until ``stop`` (blocking; the Runtime runs it on a thread of its
        own): ``on_serving`` gets the serving space's id at every NOTIFY and poll, and the
        server's reachability is kept current (``watch.watch``)."""
        watch.watch(self.liveness, stop, on_serving, self.refresh_pool)

    def recorded_serving(self) -> Space | None:
        """The serving space the database records, when it is not the one this store serves
        (another daemon committed a migration); None when unchanged."""
        with self._conn() as conn:
            sid = spaces.serving_space_id(conn)
            if sid is None or (self.serving is not None and self.serving.id == sid):
                return None
            return spaces.read_space(conn, sid)

    def follow(self, space: Space) -> None:
        """Serve ``space`` from now on (another daemon made it the serving one)."""
        self.serving = space

    def warm(self, progress: WarmProgress, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Nothing to load (PostgreSQL keeps the HNSW index); check the serving index exists."""
        if self.serving is not None:
            with self._conn() as conn:
                if spaces.index_valid(conn, self.serving.id) is False:
                    log.warning("the HNSW index of space %d is missing or invalid: vector "
                                "search scans exactly until `velesdb-memory verify --repair` "
                                "rebuilds it", self.serving.id)
        progress.phase = "ready"
        self.warm_done = True

    def close(self) -> None:
        """Finish pending writes, close the pools and the opening connection (idempotent)."""
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
            writer, background, pool = self._writer, self._background, self._pool
        for executor in (background, writer):
            if executor is not None:
                executor.shutdown(wait=True)  # the writes already queued commit first
        self._closed = True
        self.leases.close()
        if pool is not None:
            pool.close()
        with self._direct_lock:
            self._direct.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection: from the pool once started, else the opening one. PostgreSQL errors
        raised inside become worded Internal errors."""
        if self._closed:
            raise Internal("the store is closed")
        down = self.liveness.error
        if down is not None and not self.liveness.probe():
            raise StoreUnreachable(self.liveness.error or down)
        try:
            pool = self._pool
            if pool is None:
                with self._direct_lock:
                    yield self._direct
            else:
                with pool.connection() as conn:
                    yield conn
        except PoolTimeout:
            if not self.liveness.probe():
                raise StoreUnreachable(self.liveness.error or self.location) from None
            raise Internal(f"the PostgreSQL store {self.location} had no free connection for "
                           f"{POOL_TIMEOUT_S:.0f} s (all {POOL_MAX} busy): retry") from None
        except _RETRYABLE as exc:
            raise _Conflict(failed(self.location, exc).message) from None
        except psycopg.Error as exc:
            if exc.sqlstate == JOURNAL_FULL:
                raise InvalidInput(exc.diag.message_primary or str(exc)) from None
            if _moved(exc):
                raise SpaceMoved(f"another daemon moved the store to a new embedding space (a "
                                 f"migration it committed): nothing was changed, and the call "
                                 f"can run again in the new space "
                                 f"({exc.diag.message_primary or exc})") from None
            if self._closed:
                raise Internal("the store is closed") from None
            if _lost(exc):
                if self.liveness.probe():  # it answers again: drop the pool's dead connections
                    self.refresh_pool()
                raise unreachable(self.url, exc) from None
            raise failed(self.location, exc) from None

    # --- writes: one transaction each, on the write threads ----------------------------------
    def _run(self, job: Callable[[writes.Conn], writes.Outcome[T]]) -> T:
        delay = RETRY_BASE_S
        for attempt in range(WRITE_RETRIES):
            try:
                with self._conn() as conn, conn.transaction():
                    outcome = job(conn)
                break
            except _Conflict:
                if attempt + 1 == WRITE_RETRIES:
                    raise
                time.sleep(delay * (1 + random.random()))
                delay *= 2
        if outcome.effect is not None:
            try:
                outcome.effect()
            except Exception:  # the write is durable; effects only refresh in-process caches
                log.exception("applying a committed write's effect failed")
        return outcome.result

    def _submit(self, job: Callable[[writes.Conn], writes.Outcome[T]], *,
                background: bool = False) -> Future[T]:
        if self._closing:
            raise Internal("the store is closed")
        writer = self._background if background else self._writer
        if writer is None:  # not started (maintenance, tests): run it here
            try:
                return _done(self._run(job))
            except VelesmemError as exc:
                return _failed_future(exc)
        try:
            return writer.submit(self._run, job)
        except RuntimeError:  # shut down meanwhile
            raise Internal("the store is closed") from None

    def note_expiry(self, expires_at: float) -> None:
        if self._next_expiry is None or expires_at < self._next_expiry:
            self._next_expiry = expires_at
        if self.expiry_listener is not None:
            self.expiry_listener(expires_at)

    def next_expiry(self) -> float | None:
        """The earliest expiry stored (by any daemon); the last known one if the database is
        unreachable right now (the sweeper asks again)."""
        try:
            with self._conn() as conn:
                first = scalar(conn.execute("SELECT min(expires_at) FROM facts WHERE expires_at "
                                            "IS NOT NULL"))
        except VelesmemError as exc:
            log.warning("could not read the next expiry: %s", exc.message)
            return self._next_expiry
        self._next_expiry = None if first is None else float(first)
        return self._next_expiry

    # --- bearer tokens (every daemon on the database reads the same table) --------------------
    def put_token(self, name: str, digest: str, now: float) -> TokenRecord:
        with self._conn() as conn:
            try:
                conn.execute("INSERT INTO auth_tokens (name, digest, created_at) VALUES "
                             "(%s, %s, %s)", (name, digest, now))
            except pgerrors.UniqueViolation as exc:
                if exc.diag.constraint_name != "auth_tokens_live_name":
                    raise InvalidInput("a token with that digest is already recorded: create "
                                       "a new token") from None
                raise InvalidInput(
                    f"a live token named {name!r} already exists: revoke it first "
                    f"(velesdb-memory token revoke --name {name}) or pick another name"
                ) from None
        return TokenRecord(name, digest, now)

    def tokens(self) -> list[TokenRecord]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_TOKEN_COLUMNS} FROM auth_tokens ORDER BY id"
                                ).fetchall()
        return [_token(r) for r in rows]

    def revoke_token(self, name: str, now: float) -> TokenRecord | None:
        with self._conn() as conn:
            row = conn.execute(f"UPDATE auth_tokens SET revoked_at = %s WHERE name = %s AND "
                               f"revoked_at IS NULL RETURNING {_TOKEN_COLUMNS}",
                               (now, name)).fetchone()
        return None if row is None else _token(row)

    def find_token_by_hash(self, digest: str) -> TokenRecord | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_TOKEN_COLUMNS} FROM auth_tokens WHERE digest = %s",
                               (digest,)).fetchone()
        return None if row is None else _token(row)

    # --- embedding spaces --------------------------------------------------------------------
    def provenance(self) -> Identity | None:
        with self._conn() as conn:
            return spaces.read_provenance(conn)

    def migrated_from(self) -> str | None:
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'migrated_from'").fetchone()
        return None if row is None else str(row[0])

    def serving_space(self) -> Space | None:
        return self.serving

    def settle(self, identity: Identity, now: float) -> Space:
        if self.serving is not None and self.serving.identity == identity:
            return self.serving
        with self._conn() as conn:
            self.serving = spaces.settle(conn, identity, self.location, now, MIGRATION_LOCK)
        return self.serving

    def _space(self) -> Space:
        if self.serving is None:
            raise Internal("the store was opened without an embedder")
        return self.serving

    # --- writes ------------------------------------------------------------------------------
    def remember(self, w: FactWrite) -> Future[int]:
        if w.vector is not None:  # None: stored now, embedded by the backlog later
            space = self._space()
            if len(w.vector) != space.identity.dimension:
                raise SpaceMoved(f"this fact was embedded in {len(w.vector)} dimensions, but the "
                                 f"serving space {space.id} holds {space.identity.dimension}: "
                                 "another daemon moved the store to a new embedding space; "
                                 "nothing was changed")
        return self._submit(writes.remember(self, w))

    def unembedded(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        space = self.serving
        if space is None:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT f.id, f.content FROM facts f WHERE f.kind IS NULL AND "
                f"{rules.live(rules.POSTGRES, 'f')} AND (%s::bigint IS NULL OR "
                f"f.id > %s) AND NOT EXISTS (SELECT 1 FROM {spaces.table(space.id)} v WHERE "
                f"v.id = f.id) ORDER BY f.id LIMIT %s", (now, after, after, limit)).fetchall()
        return [(int(k), c) for k, c in rows]

    def fill_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[int]:
            serving = self.serving
            if serving is None or serving.id != space or not items:
                return writes.Outcome(0)
            users = {int(r[0]) for r in conn.execute(
                "SELECT id FROM facts WHERE id = ANY(%b) AND kind IS NULL ORDER BY id "
                "FOR KEY SHARE", (Keys([k for k, _ in items]),))}
            written = 0
            for key, vector in items:
                if key in users:
                    written += conn.execute(
                        f"INSERT INTO {spaces.table(space)} (id, embedding) VALUES (%s, %b) "
                        "ON CONFLICT (id) DO NOTHING",
                        (key, np.asarray(vector, dtype=np.float32))).rowcount
            if written and not self.provenance_recorded:
                writes.record_provenance(conn, serving.identity.model,
                                         serving.identity.dimension)
            return writes.Outcome(written)

        return self._submit(job)

    def relate(self, src: int, dst: int, relation: str, now: float) -> Future[int]:
        return self._submit(writes.relate(self, src, dst, relation, now))

    def unrelate(self, src: int, dst: int, relation: str) -> Future[int]:
        return self._submit(writes.unrelate(self, src, dst, relation))

    def forget(self, key: int, now: float) -> Future[bool]:
        return self._submit(writes.forget(self, key, now))

    def feedback(self, key: int, success: bool, now: float) -> Future[float]:
        return self._submit(writes.feedback(self, key, success, now))

    def purge_expired(self, now: float) -> Future[int]:
        return self._submit(writes.purge_expired(self, now, SWEEP_LOCK))

    def restore(self, key: int, confidence: float, successes: int, failures: int,
                created_at: float, updated_at: float,
                expires_at: float | None) -> Future[bool]:
        return self._submit(writes.restore(self, key, confidence, successes, failures,
                                           created_at, updated_at, expires_at))

    def restore_all(self, write: RestoreWrite) -> Future[int]:
        from velesmem.store.restore import restore_job

        return self._submit(restore_job(self, writes, writes.Outcome, write))

    def put_internal(self, key: int, content: str, metadata_json: str, kind: str, now: float,
                     expires_at: float | None = None) -> Future[int]:
        return self._submit(writes.put_internal(self, key, content, metadata_json, kind, now,
                                                expires_at))

    def delete_internal(self, key: int) -> Future[bool]:
        return self._submit(writes.delete_internal(self, key))

    def write_graph(self, graph: GraphWrite, *, job: str | None = None,
                    result: dict[str, Any] | None = None,
                    background: bool = False) -> Future[list[int]]:
        if graph.facts:
            self._space()
        return self._submit(writes.write_graph(self, graph, job, result), background=background)

    # --- durable jobs (each run by one daemon: jobs.py) --------------------------------------
    def create_job(self, job: Job, *, max_pending: int) -> Future[tuple[Job, bool]]:
        return self._submit(jobs.create(self, job, max_pending))

    def update_job(self, job_id: str, now: float, *, state: str | None = None,
                   output: str | None = None, result: dict[str, Any] | None = None,
                   error: str | None = None) -> Future[Job]:
        return self._submit(jobs.update(self, job_id, now, state=state, output=output,
                                        result=result, error=error))

    def get_job(self, job_id: str) -> Job | None:
        with self._conn() as conn:
            return jobs.get(conn, job_id)

    def pending_jobs(self, kind: str, limit: int) -> list[Job]:
        with self._conn() as conn:
            return jobs.pending(self, conn, kind, limit)

    def recent_jobs(self, kind: str, limit: int) -> list[Job]:
        with self._conn() as conn:
            return jobs.recent(conn, kind, limit)

    def claim_job(self, kind: str, now: float) -> Future[Job | None]:
        return self._submit(jobs.claim(self, kind, now))

    # --- a second embedding space (online migration) -----------------------------------------
    def create_space(self, identity: Identity, witness: tuple[float, ...],
                     now: float) -> Future[Space]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[Space]:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            existing = conn.execute("SELECT id FROM spaces WHERE state = 'building'").fetchone()
            if existing is not None:
                raise InvalidInput(f"embedding space {existing[0]} is already being built (a "
                                   "generated destination exists): recover or cancel that "
                                   "migration first")
            sid = int(scalar(conn.execute(
                "INSERT INTO spaces (model, dimension, witness, state, created_at) VALUES "
                "(%s, %s, %s, 'building', %s) RETURNING id",
                (identity.model, identity.dimension, Jsonb(list(witness)), now))))
            conn.execute(f"DROP TABLE IF EXISTS {spaces.table(sid)}")
            spaces.create_table(conn, sid, identity.dimension)
            return writes.Outcome(Space(sid, identity, witness))

        return self._submit(job)

    def building_space(self) -> Space | None:
        with self._conn() as conn:
            row = conn.execute("SELECT id FROM spaces WHERE state = 'building'").fetchone()
            return None if row is None else spaces.read_space(conn, int(row[0]))

    def load_building_index(self) -> None:
        """Nothing to load: the building space's HNSW index is PostgreSQL's."""

    def space_destination(self, space: int) -> str:
        return f"{self.location} (table {spaces.table(space)})"

    def put_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[int]:
            users = {int(r[0]) for r in conn.execute(
                "SELECT id FROM facts WHERE id = ANY(%b) AND kind IS NULL ORDER BY id "
                "FOR KEY SHARE", (Keys([k for k, _ in items]),))}
            written = 0
            for key, vector in items:
                if key in users:
                    spaces.put_vector(conn, space, key, vector)
                    written += 1
            return writes.Outcome(written)

        return self._submit(job)

    def delete_vectors(self, space: int, keys: Sequence[int]) -> Future[int]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[int]:
            return writes.Outcome(int(conn.execute(
                f"DELETE FROM {spaces.table(space)} WHERE id = ANY(%b)",
                (Keys(list(keys)),)).rowcount))

        return self._submit(job)

    def space_count(self, space: int) -> int:
        with self._conn() as conn:
            return spaces.vector_count(conn, space)

    def facts_after(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT id, content FROM facts WHERE kind IS NULL AND {LIVE} AND "
                "(%s::bigint IS NULL OR id > %s) ORDER BY id LIMIT %s",
                (now, after, after, limit)).fetchall()
        return [(int(k), c) for k, c in rows]

    def start_journal(self, epoch: str, max_bytes: int) -> Future[None]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[None]:
            used = scalar(conn.execute("SELECT coalesce(sum(bytes), 0) FROM migration_journal"))
            conn.execute("INSERT INTO meta VALUES ('journal_epoch', %s), ('journal_max_bytes', "
                         "%s), ('journal_bytes', %s) ON CONFLICT (key) DO UPDATE SET value = "
                         "excluded.value", (epoch, str(max_bytes), str(int(used))))
            return writes.Outcome(None)

        return self._submit(job)

    def journal(self, limit: int) -> tuple[list[tuple[int, int]], JournalState]:
        with self._conn() as conn:
            rows = [(int(s), int(k)) for s, k in conn.execute(
                "SELECT seq, key FROM migration_journal ORDER BY seq LIMIT %s", (limit,))]
            entries, size, dirty = one(conn.execute(
                "SELECT count(*), coalesce(sum(bytes), 0), count(DISTINCT key) FROM "
                "migration_journal"))
            epoch = conn.execute("SELECT value FROM meta WHERE key = 'journal_epoch'").fetchone()
        return rows, JournalState(None if epoch is None else epoch[0], int(entries), int(size),
                                  int(dirty))

    def ack_journal(self, upto: int) -> Future[None]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[None]:
            conn.execute("DELETE FROM migration_journal WHERE seq <= %s", (upto,))
            conn.execute("UPDATE meta SET value = (SELECT coalesce(sum(bytes), 0) FROM "
                         "migration_journal)::text WHERE key = 'journal_bytes'")
            return writes.Outcome(None)

        return self._submit(job)

    def stop_journal(self) -> Future[None]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[None]:
            conn.execute("DELETE FROM meta WHERE key IN ('journal_epoch', 'journal_max_bytes', "
                         "'journal_bytes')")
            conn.execute("DELETE FROM migration_journal")
            return writes.Outcome(None)

        return self._submit(job)

    def activate_space(self, space: int, witness: tuple[float, ...]) -> Future[None]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[None]:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            new = spaces.read_space(conn, space)
            if new is None:
                raise Internal(f"embedding space {space} does not exist")
            # Inside the transaction, with the facts locked against writers, so that no write
            # lands between the check and the flip.
            conn.execute("LOCK TABLE facts IN SHARE MODE")
            pending = scalar(conn.execute("SELECT count(*) FROM migration_journal"))
            if pending:
                raise Internal(f"{pending} writes are not yet in the new space: not activated")
            facts = scalar(conn.execute("SELECT count(*) FROM facts WHERE kind IS NULL"))
            vectors = spaces.vector_count(conn, space)
            if facts != vectors:
                raise Internal(f"the new space holds {vectors} vectors for {facts} facts: "
                               "not activated")
            old = self.serving
            conn.execute("UPDATE spaces SET state = 'retired' WHERE state = 'serving'")
            conn.execute("UPDATE spaces SET state = 'serving', witness = %s WHERE id = %s",
                         (Jsonb(list(witness)), space))
            # Every daemon's watcher hears this at the commit, and follows (watch.py).
            conn.execute("SELECT pg_notify(%s, %s)", (watch.CHANNEL, str(space)))
            pairs = [("serving_space", str(space)), ("provenance_model", new.identity.model),
                     ("provenance_dimension", str(new.identity.dimension))]
            if old is not None:
                pairs.append(("migrated_from", old.identity.model))
            for key, value in pairs:
                conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET "
                             "value = excluded.value", (key, value))

            def effect() -> None:
                self.serving = Space(new.id, new.identity, witness)
                log.info("embedding space %d (%s) now serves; space %s retired", new.id,
                         new.identity.model, None if old is None else old.id)

            return writes.Outcome(None, effect)

        return self._submit(job)

    def drop_space(self, space: int) -> Future[None]:
        def job(conn: psycopg.Connection[Any]) -> writes.Outcome[None]:
            if self.serving is not None and self.serving.id == space:
                raise InvalidInput(f"embedding space {space} serves: it cannot be dropped")
            conn.execute(f"DROP TABLE IF EXISTS {spaces.table(space)}")
            conn.execute("DELETE FROM spaces WHERE id = %s", (space,))
            return writes.Outcome(None)

        return self._submit(job)

    # --- reads -------------------------------------------------------------------------------
    def facts(self, keys: Sequence[int], now: float, *,
              user_only: bool = True) -> dict[int, StoredFact]:
        if not keys:
            return {}
        kind = " AND kind IS NULL" if user_only else ""
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = ANY(%b) AND "
                                f"{LIVE}{kind}", (Keys(keys), now)).fetchall()
        return {f.key: f for f in map(_fact, rows)}

    def confidences(self, keys: Sequence[int], now: float) -> dict[int, float]:
        if not keys:
            return {}
        with self._conn() as conn:
            rows = conn.execute(f"SELECT id, confidence FROM facts WHERE id = ANY(%b) AND "
                                f"kind IS NULL AND {LIVE}", (Keys(keys), now)).fetchall()
        return {int(i): float(c) for i, c in rows}

    def matching(self, predicate: Predicate) -> np.ndarray:
        compiled = compile_predicate(predicate)
        if compiled.ids is None:
            raise InvalidInput("matching() needs a predicate; TRUE matches every fact")
        with self._conn() as conn:
            # One packed bytea instead of a row per key.
            row = conn.execute(f"SELECT string_agg(int8send(id), ''::bytea ORDER BY id) FROM "
                               f"({compiled.ids}) m", compiled.params).fetchone()
        if row is None or row[0] is None:
            return np.zeros(0, np.int64)
        return matched(np.frombuffer(row[0], dtype=">i8").astype(np.int64), compiled)

    @property
    def parallel_search(self) -> bool:
        return True  # each side is a round trip: the server works while this process waits

    def text_search(self, query: str, allowed: np.ndarray | None) -> tuple[np.ndarray,
                                                                           np.ndarray]:
        with self._conn() as conn:
            return self.text.search(conn, query, allowed)

    def vector_search(self, query: np.ndarray, n: int,
                      allowed: np.ndarray | None) -> list[tuple[int, float]]:
        space = self._space()
        with self._conn() as conn:
            return spaces.search(conn, space.id, query, n, allowed)

    def vector_candidates(self, query: np.ndarray, n: int,
                          allowed: np.ndarray | None) -> np.ndarray:
        return np.asarray([i for i, _ in self.vector_search(query, n, allowed)], np.int64)

    def scored(self, query: np.ndarray, keys: Sequence[int],
               now: float) -> dict[int, tuple[float, float]]:
        space = self._space()
        with self._conn() as conn:
            return spaces.scored(conn, space.id, query, list(keys), now)

    def vector_top(self, query: np.ndarray, n: int, allowed: np.ndarray | None,
                   now: float) -> list[tuple[int, float, float]]:
        candidates = self.vector_candidates(query, n, allowed)
        return top_scored(self.scored(query, candidates.tolist(), now), candidates, n)

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT e.dst, e.relation FROM edges e JOIN facts f ON f.id = e.dst WHERE "
                f"e.src = %s AND {rules.live(rules.POSTGRES, 'f')} ORDER BY e.id "
                "LIMIT %s", (key, now, limit)).fetchall()
        return [(int(d), r) for d, r in rows]

    def confidence_history(self, key: int, limit: int) -> list[ConfidenceEvent]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT at, confidence, cause FROM confidence_events WHERE fact = %s "
                "ORDER BY id DESC LIMIT %s", (key, limit)).fetchall()
        return [ConfidenceEvent(float(at), float(c), str(cause)) for at, c, cause in rows]

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT e.src, e.relation FROM edges e JOIN facts f ON f.id = e.src WHERE "
                f"e.dst = %s AND {rules.live(rules.POSTGRES, 'f')} ORDER BY e.id "
                "LIMIT %s", (key, now, limit)).fetchall()
        return [(int(s), r) for s, r in rows]

    def related_keys(self, keys: Sequence[int], relations: Sequence[str]) -> set[int]:
        rels = list(dict.fromkeys(relations))
        if not keys or not rels:
            return set()
        ids = Keys(keys)
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT src FROM edges WHERE src = ANY(%b) AND relation = ANY(%s) "
                "UNION SELECT dst FROM edges WHERE dst = ANY(%b) AND relation = ANY(%s)",
                (ids, rels, ids, rels)).fetchall()
        return {int(k) for (k,) in rows}

    def targets(self, key: int) -> list[int]:
        with self._conn() as conn:
            return [int(d) for (d,) in conn.execute("SELECT dst FROM edges WHERE src = %s",
                                                    (key,))]

    def counts(self, now: float) -> Counts:
        with self._conn() as conn:
            facts = scalar(conn.execute(f"SELECT count(*) FROM facts WHERE kind IS NULL AND {LIVE}",
                                        (now,)))
            edges = scalar(conn.execute("SELECT count(*) FROM edges"))
        return Counts(int(facts), int(edges))

    def count_by(self, key: str, now: float) -> dict[str, int]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT m.str, count(*) FROM {meta_index.TABLE} m JOIN facts f ON f.id = m.id "
                f"WHERE m.key = %s AND m.type = 'text' AND f.kind IS NULL AND "
                f"{rules.live(rules.POSTGRES, 'f')} GROUP BY m.str ORDER BY m.str",
                (key, now)).fetchall()
        return {str(value): int(n) for value, n in rows}

    def page(self, after: int | None, limit: int, predicate: Predicate, *, include_internal: bool,
             now: float) -> list[StoredFact]:
        compiled = compile_predicate(predicate)
        kind = "" if include_internal else " AND kind IS NULL"
        base = (f"SELECT {_FACT_COLUMNS} FROM facts WHERE {LIVE}{kind} AND "
                f"{compiled.condition('facts')}")
        # u64 order = the non-negative int64 keys ascending, then the negative ones ascending.
        segments: list[tuple[str, int]] = []
        if after is None or after < (1 << 63):
            low = -1 if after is None else after
            segments.append(("id >= 0 AND id > %s", low))
            segments.append(("id < 0 AND id >= %s", _I64_MIN))
        else:
            segments.append(("id < 0 AND id > %s", to_i64(after)))
        rows: list[tuple[Any, ...]] = []
        with self._conn() as conn:
            for where, bound in segments:
                need = limit - len(rows)
                if need <= 0:
                    break
                rows += conn.execute(f"{base} AND {where} ORDER BY id LIMIT %s",
                                     (now, *compiled.params, bound, need)).fetchall()
        return [_fact(r) for r in rows]

    def get_internal(self, key: int, now: float) -> StoredFact | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = %s AND kind IS "
                               f"NOT NULL AND {LIVE}", (key, now)).fetchone()
        return None if row is None else _fact(row)

    def scan_internal(self, kind: str, predicate: Predicate, limit: int,
                      now: float) -> list[StoredFact]:
        compiled = compile_predicate(predicate)
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_FACT_COLUMNS} FROM facts WHERE kind = %s AND {LIVE} AND "
                f"{compiled.condition('facts')} ORDER BY seq DESC LIMIT %s",
                (kind, now, *compiled.params, limit)).fetchall()
        return [_fact(r) for r in rows]

    def export(self, now: float, *, include_internal: bool) -> Iterator[StoredFact | Edge]:
        """Every live fact (u64 id order), then every edge, from one consistent snapshot (a
        REPEATABLE READ transaction on a connection of its own, read in batches)."""
        if self._closed:
            raise Internal("the store is closed")
        kind = "" if include_internal else " AND kind IS NULL"
        conn = connect(self.url)
        try:
            configure(conn)
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            with conn.cursor(name="velesmem_export_facts") as cur:
                cur.itersize = EXPORT_BATCH
                cur.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE {LIVE}{kind} "
                            "ORDER BY id < 0, id", (now,))
                for row in cur:
                    yield _fact(row)
            with conn.cursor(name="velesmem_export_edges") as cur:
                cur.itersize = EXPORT_BATCH
                cur.execute("SELECT id, src, dst, relation FROM edges ORDER BY id")
                for i, src, dst, rel in cur:
                    yield Edge(int(i), int(src), int(dst), rel)
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            raise failed(self.location, exc) from None
        finally:
            conn.close()

    # --- integrity ---------------------------------------------------------------------------
    def verify(self) -> list[Problem]:
        from velesmem.store.postgres.verify import verify

        with self._conn() as conn:
            return verify(self, conn)

    def repair(self, report: Callable[[str], None],
               embed: Callable[[list[str]], np.ndarray] | None = None) -> list[Problem]:
        from velesmem.store.postgres.verify import repair

        with self._conn() as conn:
            return repair(self, conn, report, embed)


def open_postgres(settings: Settings, identity: Identity | None, now: float) -> PostgresStore:
    """Open the database ``VELESDB_MEMORY_DATABASE_URL`` names: extension, migrations, and with
    ``identity`` the serving space (a store filled by another embedder is refused)."""
    url = settings.database_url
    if not url:
        raise Internal("VELESDB_MEMORY_BACKEND=postgres needs VELESDB_MEMORY_DATABASE_URL, e.g. "
                       "postgresql://velesmem:PASSWORD@db.example.com:5432/velesmem "
                       "(docs/team.md)")
    location = redact(url)
    conn = connect(url)
    serving: Space | None
    try:
        try:
            ensure_extension(conn, location)
            migrate(conn, now)
            configure(conn)
            if identity is not None:
                serving = spaces.settle(conn, identity, location, now, MIGRATION_LOCK)
            else:  # maintenance: the space as recorded, settled by no embedder
                sid = spaces.serving_space_id(conn)
                serving = None if sid is None else spaces.read_space(conn, sid)
        except psycopg.OperationalError as exc:
            raise unreachable(url, exc) from None
        except psycopg.Error as exc:
            raise failed(location, exc) from None
        return PostgresStore(url, conn, serving)
    except BaseException:
        conn.close()
        raise


__all__ = ["PostgresStore", "open_postgres"]

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
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
from psycopg import errors as pgerrors
from psycopg_pool import ConnectionPool, PoolTimeout

from velesmem.errors import Internal, InvalidInput, VelesmemError
from velesmem.ids import to_i64
from velesmem.store.postgres import jobs, spaces, writes
from velesmem.store.postgres.connection import (
    APPLICATION,
    CONNECT_TIMEOUT_S,
    Keys,
    configure,
    connect,
    failed,
    redact,
    unreachable,
)
from velesmem.store.postgres.predicates import compile_predicate, matched
from velesmem.store.postgres.schema import MIGRATION_LOCK, ensure_extension, migrate
from velesmem.store.postgres.text import TextIndex
from velesmem.store.predicates import All
from velesmem.store.protocol import (
    Counts,
    Edge,
    FactWrite,
    Identity,
    Problem,
    Space,
    StoredFact,
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
LIVE = "(expires_at IS NULL OR expires_at > %s)"
_I64_MIN = -(1 << 63)
_RETRYABLE = (pgerrors.SerializationFailure, pgerrors.DeadlockDetected)
_FACT_COLUMNS = ("id, content, metadata, kind, confidence, successes, failures, created_at, "
                 "updated_at, expires_at")
log = logging.getLogger(__name__)


class _Conflict(Internal):
    """A transaction PostgreSQL aborted for a concurrent one (serialization, deadlock): it
    changed nothing and is retried."""


def _lost(exc: psycopg.Error) -> bool:
    """The connection failed or the server went away (no SQL state, class 08, or 57P)."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state.startswith("57P")


def _fact(row: tuple[Any, ...]) -> StoredFact:
    return StoredFact(int(row[0]), row[1], row[2], row[3], float(row[4]), int(row[5]),
                      int(row[6]), float(row[7]), float(row[8]),
                      None if row[9] is None else float(row[9]))


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
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
        self._closed = False
        self._state_lock = threading.Lock()
        self.text = TextIndex()
        self.provenance_recorded = spaces.read_provenance(conn) is not None
        self.expiry_listener: Callable[[float], None] | None = None
        self._next_expiry: float | None = None
        self.warm_done = False
        self.worker = f"{APPLICATION}-{random.getrandbits(48):012x}"  # this process's claims

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Open the connection pool and the write threads (idempotent)."""
        with self._state_lock:
            if self._closed or self._pool is not None:
                return
            pool: ConnectionPool[Any] = ConnectionPool(
                self.url, min_size=POOL_MIN, max_size=POOL_MAX, open=False, name=APPLICATION,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                        "application_name": APPLICATION},
                configure=configure, timeout=POOL_TIMEOUT_S)
            try:
                pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
            except PoolTimeout as exc:
                pool.close()
                raise unreachable(self.url, exc) from None
            self._pool = pool
            self._writer = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="velesmem-pgwrite")

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
            if self._closed:
                return
            self._closed = True
            writer, pool = self._writer, self._pool
        if writer is not None:
            writer.shutdown(wait=True)
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
        try:
            pool = self._pool
            if pool is None:
                with self._direct_lock:
                    yield self._direct
            else:
                with pool.connection() as conn:
                    yield conn
        except PoolTimeout:
            raise Internal(f"the PostgreSQL store {self.location} had no free connection for "
                           f"{POOL_TIMEOUT_S:.0f} s (all {POOL_MAX} busy): retry") from None
        except _RETRYABLE as exc:
            raise _Conflict(failed(self.location, exc).message) from None
        except psycopg.Error as exc:
            if self._closed:
                raise Internal("the store is closed") from None
            if _lost(exc):
                raise unreachable(self.url, exc) from None
            raise failed(self.location, exc) from None

    # --- writes: one transaction each, on the write threads ----------------------------------
    def _run(self, job: writes.Job) -> Any:
        delay = RETRY_BASE_S
        for attempt in range(WRITE_RETRIES):
            try:
                with self._conn() as conn:
                    with conn.transaction():
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

    def _submit(self, job: writes.Job) -> Future[Any]:
        if self._closed:
            raise Internal("the store is closed")
        writer = self._writer
        if writer is None:  # not started (maintenance, tests): run it here
            try:
                return _done(self._run(job))
            except VelesmemError as exc:
                return _failed_future(exc)
        try:
            return writer.submit(self._run, job)
        except RuntimeError:  # shut down meanwhile
            raise Internal("the store is closed") from None

    def journal_write(self, conn: psycopg.Connection[Any], key: int) -> None:
        """Record that fact ``key`` (or its outgoing edges) changed, for a running migration."""

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
                row = conn.execute("SELECT min(expires_at) FROM facts WHERE expires_at IS NOT "
                                   "NULL").fetchone()
        except VelesmemError as exc:
            log.warning("could not read the next expiry: %s", exc.message)
            return self._next_expiry
        self._next_expiry = None if row[0] is None else float(row[0])
        return self._next_expiry

    # --- embedding spaces --------------------------------------------------------------------
    def provenance(self) -> Identity | None:
        with self._conn() as conn:
            return spaces.read_provenance(conn)

    def serving_space(self) -> Space | None:
        return self.serving

    def _space(self) -> Space:
        if self.serving is None:
            raise Internal("the store was opened without an embedder")
        return self.serving

    # --- writes ------------------------------------------------------------------------------
    def remember(self, w: FactWrite) -> Future[int]:
        self._space()
        return self._submit(writes.remember(self, w))

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

    def put_internal(self, key: int, content: str, metadata_json: str, kind: str, now: float,
                     expires_at: float | None = None) -> Future[int]:
        return self._submit(writes.put_internal(self, key, content, metadata_json, kind, now,
                                                expires_at))

    def delete_internal(self, key: int) -> Future[bool]:
        return self._submit(writes.delete_internal(self, key))

    # --- durable jobs (claimed so one daemon runs each) --------------------------------------
    def enqueue_job(self, job_id: str, kind: str, fingerprint: str, payload: Any,
                    now: float) -> Future[bool]:
        return self._submit(jobs.enqueue(job_id, kind, fingerprint, payload, now))

    def claim_job(self, kind: str, now: float, lease_s: float,
                  worker: str | None = None) -> Future[jobs.ClaimedJob | None]:
        return self._submit(jobs.claim(kind, worker or self.worker, now, lease_s))

    def renew_job(self, job_id: str, now: float, lease_s: float,
                  worker: str | None = None) -> Future[bool]:
        return self._submit(jobs.renew(job_id, worker or self.worker, now, lease_s))

    def finish_job(self, job_id: str, now: float, result: Any = None, error: str | None = None,
                   worker: str | None = None) -> Future[bool]:
        return self._submit(jobs.finish(job_id, worker or self.worker, now, result, error))

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

    def matching(self, predicate: All) -> np.ndarray:
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

    def text_search(self, query: str, allowed: np.ndarray | None) -> tuple[np.ndarray,
                                                                           np.ndarray]:
        with self._conn() as conn:
            return self.text.search(conn, query, allowed)

    def vector_search(self, query: np.ndarray, n: int,
                      allowed: np.ndarray | None) -> list[tuple[int, float]]:
        space = self._space()
        with self._conn() as conn:
            return spaces.search(conn, space.id, query, n, allowed)

    def similarities(self, query: np.ndarray, keys: Sequence[int]) -> dict[int, float]:
        space = self._space()
        with self._conn() as conn:
            return spaces.similarities(conn, space.id, query, list(keys))

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT e.dst, e.relation FROM edges e JOIN facts f ON f.id = e.dst WHERE "
                "e.src = %s AND (f.expires_at IS NULL OR f.expires_at > %s) ORDER BY e.id "
                "LIMIT %s", (key, now, limit)).fetchall()
        return [(int(d), r) for d, r in rows]

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT e.src, e.relation FROM edges e JOIN facts f ON f.id = e.src WHERE "
                "e.dst = %s AND (f.expires_at IS NULL OR f.expires_at > %s) ORDER BY e.id "
                "LIMIT %s", (key, now, limit)).fetchall()
        return [(int(s), r) for s, r in rows]

    def targets(self, key: int) -> list[int]:
        with self._conn() as conn:
            return [int(d) for (d,) in conn.execute("SELECT dst FROM edges WHERE src = %s",
                                                    (key,))]

    def counts(self, now: float) -> Counts:
        with self._conn() as conn:
            facts = conn.execute(f"SELECT count(*) FROM facts WHERE kind IS NULL AND {LIVE}",
                                 (now,)).fetchone()[0]
            edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
        return Counts(int(facts), int(edges))

    def page(self, after: int | None, limit: int, predicate: All, *, include_internal: bool,
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

    def scan_internal(self, kind: str, predicate: All, limit: int,
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

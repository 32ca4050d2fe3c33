"""Durable jobs in PostgreSQL, each run by exactly one daemon.

A daemon runs a job only while it holds the job's **lease**: a session advisory lock on a
connection of its own (``Leases``). The lock lives exactly as long as that daemon's connection,
so when a daemon dies (or is SIGKILLed) its leases vanish with it and another daemon may take
its running jobs over; while it lives, nobody else can. ``claim`` picks a job with ``FOR UPDATE
SKIP LOCKED`` (daemons claiming at once each get a different row, none waits) and takes its
lease before marking it running: a running job whose holder died comes first (resumed, its
persisted output kept), then the oldest accepted one. ``pending`` lists the jobs not terminal
yet, leaving out those another live daemon runs; an abandoned running job it lists is taken
over (leased) on the way, so two daemons never resume the same one. Reaching a terminal state
releases the lease.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from velesmem.errors import InvalidInput, NotFound
from velesmem.store.postgres.connection import connect
from velesmem.store.postgres.writes import Conn, Job, Outcome
from velesmem.store import rules
from velesmem.store.rows import scalar
from velesmem.store.types import Job as JobRecord

if TYPE_CHECKING:
    from velesmem.store.postgres.backend import PostgresStore

COLUMNS = ("id, kind, state, fingerprint, created_at, updated_at, payload, output, result, "
           "error")
CANDIDATES = 32  # jobs looked at per claim
_LOCK_KEY = "hashtextextended('velesmem-job:' || %s, 0)"


def from_row(row: tuple[Any, ...]) -> JobRecord:
    return JobRecord(row[0], row[1], row[2], row[3], float(row[4]), float(row[5]), row[6],
                     row[7], row[8], row[9])


def get(conn: Conn, job_id: str) -> JobRecord | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM jobs WHERE id = %s", (job_id,)).fetchone()
    return None if row is None else from_row(row)


def recent(conn: Conn, kind: str, limit: int) -> list[JobRecord]:
    """Jobs of ``kind`` in any state, newest first (read-only: no lease is taken)."""
    rows = conn.execute(f"SELECT {COLUMNS} FROM jobs WHERE kind = %s "
                        f"ORDER BY {rules.RECENT_ORDER} LIMIT %s", (kind, limit)).fetchall()
    return [from_row(r) for r in rows]


class Leases:
    """The advisory locks of the jobs this process runs, on one connection of their own."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self.held: set[str] = set()

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._url)
            self.held.clear()  # a new session holds nothing
        return self._conn

    def take(self, job_id: str) -> bool:
        """Lease ``job_id`` to this process; False when a live daemon holds it."""
        with self._lock:
            if job_id in self.held:
                return True
            got = bool(scalar(self._connection().execute(
                f"SELECT pg_try_advisory_lock({_LOCK_KEY})", (job_id,))))
            if got:
                self.held.add(job_id)
            return got

    def release(self, job_id: str) -> None:
        with self._lock:
            if job_id not in self.held:
                return
            self.held.discard(job_id)
            if self._conn is not None and not self._conn.closed:
                self._conn.execute(f"SELECT pg_advisory_unlock({_LOCK_KEY})", (job_id,))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self.held.clear()


def _released(store: PostgresStore, job_id: str) -> Callable[[], None]:
    return lambda: store.leases.release(job_id)


def set_job(conn: Conn, job_id: str, now: float, *, state: str | None = None,
            output: str | None = None, result: dict[str, Any] | None = None,
            error: str | None = None) -> JobRecord:
    """Change a job as the protocol's ``update_job`` says (a terminal state drops its payload
    and output), inside the caller's transaction."""
    row = conn.execute(
        "UPDATE jobs SET state = coalesce(%(state)s, state), updated_at = %(now)s, "
        f"output = CASE WHEN {rules.terminal('coalesce(%(state)s, state)')} THEN NULL "
        "ELSE coalesce(%(output)s, output) END, "
        "result = coalesce(%(result)s, result), error = coalesce(%(error)s, error), "
        f"payload = CASE WHEN {rules.terminal('coalesce(%(state)s, state)')} THEN NULL "
        f"ELSE payload END WHERE id = %(id)s RETURNING {COLUMNS}",
        {"state": state, "now": now, "output": output,
         "result": None if result is None else Jsonb(result), "error": error,
         "id": job_id}).fetchone()
    if row is None:
        raise NotFound(f"no job {job_id}")
    return from_row(row)


def create(store: PostgresStore, job: JobRecord, max_pending: int) -> Job:
    def run(conn: Conn) -> Outcome[tuple[JobRecord, bool]]:
        existing = get(conn, job.id)
        if existing is not None:
            return Outcome((existing, False))
        # One creator of a kind at a time, so concurrent daemons keep to the cap.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('velesmem-jobs:' || %s, 0))",
                     (job.kind,))
        pending = scalar(conn.execute(f"SELECT count(*) FROM jobs WHERE kind = %s AND "
                                      f"{rules.pending()}", (job.kind,)))
        if pending >= max_pending:
            raise InvalidInput(f"{pending} {job.kind} jobs are still pending (the cap is "
                               f"{max_pending}): wait for some to finish (extraction_status), "
                               "then retry")
        inserted = conn.execute(
            f"INSERT INTO jobs ({COLUMNS}, claimed_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
            (job.id, job.kind, job.state, job.fingerprint, job.created_at, job.updated_at,
             None if job.payload is None else Jsonb(job.payload), job.output,
             None if job.result is None else Jsonb(job.result), job.error,
             store.worker if job.state == "running" else None)).fetchone()
        if inserted is None:  # created by another daemon meanwhile
            found = get(conn, job.id)
            assert found is not None
            return Outcome((found, False))
        if job.state == "running":  # created running: this process runs it
            store.leases.take(job.id)
        return Outcome((job, True))

    return run


def update(store: PostgresStore, job_id: str, now: float, **changes: Any) -> Job:
    def run(conn: Conn) -> Outcome[JobRecord]:
        record = set_job(conn, job_id, now, **changes)
        if rules.is_terminal(record.state):
            return Outcome(record, _released(store, job_id))
        return Outcome(record)

    return run


def claim(store: PostgresStore, kind: str, now: float) -> Job:
    """Lease and mark running one claimable job of ``kind`` (see the module docstring)."""

    def run(conn: Conn) -> Outcome[JobRecord | None]:
        rows = conn.execute(
            f"SELECT id, state FROM jobs WHERE kind = %s AND {rules.pending()} "
            f"ORDER BY {rules.RESUME_ORDER} LIMIT %s FOR UPDATE SKIP LOCKED",
            (kind, CANDIDATES)).fetchall()
        for job_id, state in rows:
            if state == "running" and job_id in store.leases.held:
                continue  # this process runs it already
            if not store.leases.take(job_id):
                continue  # a live daemon runs it
            try:
                conn.execute("UPDATE jobs SET claimed_by = %s, attempts = attempts + 1 "
                             "WHERE id = %s", (store.worker, job_id))
                record = set_job(conn, job_id, now, state="running")
            except BaseException:
                store.leases.release(job_id)
                raise
            return Outcome(record)
        return Outcome(None)

    return run


def pending(store: PostgresStore, conn: Conn, kind: str, limit: int) -> list[JobRecord]:
    """Jobs of ``kind`` not terminal, running ones first (see the module docstring)."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM jobs WHERE kind = %s AND {rules.pending()} "
        f"ORDER BY {rules.RESUME_ORDER} LIMIT %s", (kind, limit)).fetchall()
    out = []
    for record in map(from_row, rows):
        if record.state == "running" and record.id not in store.leases.held:
            if not store.leases.take(record.id):
                continue  # another live daemon runs it
            conn.execute("UPDATE jobs SET claimed_by = %s, attempts = attempts + 1 WHERE id = %s",
                         (store.worker, record.id))
        out.append(record)
    return out

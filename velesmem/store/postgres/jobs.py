"""Durable jobs in PostgreSQL, claimed so that one daemon runs each.

A claim is one statement: the oldest queued job of a kind (or a running one whose lease lapsed:
its daemon died) is picked ``FOR UPDATE SKIP LOCKED``, so daemons claiming at once each get a
different job and none waits on another's pick, and marked running under the claimer's name
with a lease. Only the holder of the claim may finish it; a daemon that dies mid-job loses
nothing: its lease lapses and another daemon takes the job over (``attempts`` counts the
claims).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from velesmem.store.postgres.writes import Conn, Job, Outcome

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


@dataclass(frozen=True)
class ClaimedJob:
    id: str
    kind: str
    fingerprint: str
    payload: Any
    attempts: int
    lease_until: float


def enqueue(job_id: str, kind: str, fingerprint: str, payload: Any, now: float) -> Job:
    """Queue a job (idempotent per id); resolves to True when it was new."""

    def job(conn: Conn) -> Outcome[bool]:
        row = conn.execute(
            "INSERT INTO jobs (id, kind, state, fingerprint, payload, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING 1",
            (job_id, kind, QUEUED, fingerprint, Jsonb(payload), now, now)).fetchone()
        return Outcome(row is not None)

    return job


def claim(kind: str, worker: str, now: float, lease_s: float) -> Job:
    """Claim the oldest claimable job of ``kind`` for ``worker``; resolves to it or None."""

    def job(conn: Conn) -> Outcome[ClaimedJob | None]:
        row = conn.execute(
            "UPDATE jobs SET state = %s, claimed_by = %s, lease_until = %s, "
            "attempts = attempts + 1, updated_at = %s WHERE id = (SELECT id FROM jobs "
            "WHERE kind = %s AND (state = %s OR (state = %s AND lease_until <= %s)) "
            "ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
            "RETURNING id, kind, fingerprint, payload, attempts, lease_until",
            (RUNNING, worker, now + lease_s, now, kind, QUEUED, RUNNING, now)).fetchone()
        if row is None:
            return Outcome(None)
        return Outcome(ClaimedJob(row[0], row[1], row[2], row[3], int(row[4]), float(row[5])))

    return job


def renew(job_id: str, worker: str, now: float, lease_s: float) -> Job:
    """Extend a held claim; resolves to False when it is no longer ``worker``'s."""

    def job(conn: Conn) -> Outcome[bool]:
        n = conn.execute("UPDATE jobs SET lease_until = %s, updated_at = %s WHERE id = %s AND "
                         "state = %s AND claimed_by = %s",
                         (now + lease_s, now, job_id, RUNNING, worker)).rowcount
        return Outcome(n == 1)

    return job


def finish(job_id: str, worker: str, now: float, result: Any = None,
           error: str | None = None) -> Job:
    """End a held job (done, or failed with ``error``); its payload is dropped. Resolves to
    False when the claim is no longer ``worker``'s (its lease lapsed and another took it)."""

    def job(conn: Conn) -> Outcome[bool]:
        n = conn.execute(
            "UPDATE jobs SET state = %s, result = %s, error = %s, payload = NULL, "
            "lease_until = NULL, updated_at = %s WHERE id = %s AND state = %s AND "
            "claimed_by = %s",
            (FAILED if error is not None else DONE, None if result is None else Jsonb(result),
             error, now, job_id, RUNNING, worker)).rowcount
        return Outcome(n == 1)

    return job

"""Durable jobs for ``SqliteStore``: created, changed and claimed by the writer, read directly.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from velesmem.store import rules
from velesmem.store.sqlite import writes
from velesmem.store.sqlite.part import StorePart
from velesmem.store.types import Job


class JobPart(StorePart):
    """``JobStore``: the states and their order are ``velesmem.store.rules``'."""

    def create_job(self, job: Job, *, max_pending: int) -> Future[tuple[Job, bool]]:
        return self._submit(writes.create_job(job, max_pending))

    def update_job(self, job_id: str, now: float, *, state: str | None = None,
                   output: str | None = None, result: dict[str, Any] | None = None,
                   error: str | None = None) -> Future[Job]:
        return self._submit(writes.update_job(job_id, now, state=state, output=output,
                                              result=result, error=error))

    def get_job(self, job_id: str) -> Job | None:
        return writes._get_job(self.reader(), job_id)

    def pending_jobs(self, kind: str, limit: int) -> list[Job]:
        rows = self.reader().execute(
            f"SELECT {writes.JOB_COLUMNS} FROM jobs WHERE kind = ? AND {rules.pending()} "
            f"ORDER BY {rules.RESUME_ORDER} LIMIT ?",
            (kind, limit)).fetchall()
        return [writes.job_from_row(r) for r in rows]

    def recent_jobs(self, kind: str, limit: int) -> list[Job]:
        rows = self.reader().execute(
            f"SELECT {writes.JOB_COLUMNS} FROM jobs WHERE kind = ? "
            f"ORDER BY {rules.RECENT_ORDER} LIMIT ?", (kind, limit)).fetchall()
        return [writes.job_from_row(r) for r in rows]

    def claim_job(self, kind: str, now: float) -> Future[Job | None]:
        return self._submit(writes.claim_job(kind, now))

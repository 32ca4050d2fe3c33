"""The Status page (``/status``): the daemon's state (warming progress, database reachability),
its store and backend, the embedder and embedding spaces, fact and edge counts, extraction and
migration jobs with their progress, the live MCP sessions and their clients (the daemon's
session ledger), and the recent warnings and errors of its log (``Runtime.recent_errors``).
Every part is a bounded read: a few rows, never a scan of the facts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from velesmem import limits
from velesmem.extract.jobs import KIND as EXTRACT_KIND
from velesmem.logtail import LogLine
from velesmem.runtime import Runtime
from velesmem.store.types import Job, Space
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get
from velesmem.web.sessions import ClientSession

JOBS_SHOWN = 10  # extraction jobs listed (newest first)


@dataclass(frozen=True)
class StatusView:
    """Everything the Status page shows, read at one moment."""

    health: dict[str, Any]
    backend: str
    location: str
    memory: dict[str, Any]  # memory_status: embedder, provenance, extraction, counts
    serving: Space | None
    building: Space | None
    extraction_jobs: list[Job]
    extraction_pending: int
    migration: dict[str, Any] | None  # migration_status's job (None: never migrated)
    migration_share: float | None  # facts copied into the new space / facts stored
    sessions: list[ClientSession]
    errors: list[LogLine]
    read_at: float


def gather(runtime: Runtime, sessions: list[ClientSession]) -> StatusView:
    """Read the Status page's figures from the running process (blocking: off the loop)."""
    store = runtime.store
    memory = runtime.memory.memory_status().to_dict()
    migration = runtime.migration.status().get("job")
    share = None
    if migration is not None:
        copied = migration.get("progress", {}).get("base_facts")
        facts = memory["memory"]["facts"]
        if isinstance(copied, int) and facts:
            share = min(copied / facts, 1.0)
    jobs = store.recent_jobs(EXTRACT_KIND, JOBS_SHOWN)
    pending = len(store.pending_jobs(EXTRACT_KIND, limits.MAX_PENDING_EXTRACTIONS))
    return StatusView(runtime.health(), runtime.settings.backend, store.location, memory,
                      store.serving_space(), store.building_space(), jobs, pending, migration,
                      share, sessions, runtime.recent_errors.lines(), time.time())


async def show(web: WebContext, request: Request) -> Response:
    sessions = web.sessions()
    view = await web.read(gather, web.runtime, sessions)
    return web.render(request, "status.html", title="Status", view=view)


PAGE = Page("status", routes=(get("/status", show),), nav="Status", order=40)

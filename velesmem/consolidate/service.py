"""ConsolidationService: preview a run, apply it in one transaction journaled as a job, undo it.

The journal is a durable job of kind ``consolidate`` whose result lists the edges the run added;
applying writes those edges and commits the job in ONE transaction, so a killed run leaves either
nothing or the whole run. Undo removes exactly those edges (idempotent: a second undo, or one
finishing an interrupted undo, removes what is left) and marks the journal entry undone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from velesmem import limits
from velesmem.consolidate.plan import ARCHIVED_RELATION, Change, Plan, plan
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import to_u64
from velesmem.store.roles import FactStore, JobStore, MaintenanceStore
from velesmem.store.types import Edge, GraphWrite, Job, StoredFact

RUN_KIND = "consolidate"


class ConsolidationStore(FactStore, JobStore, MaintenanceStore, Protocol):
    """The roles a consolidation run uses: edges, the job journal, a consistent snapshot."""


@dataclass(frozen=True)
class RunReport:
    """What a run changed (or would change) and why; ``run`` is None for a preview."""

    run: str | None
    applied: bool
    undone: bool
    changes: tuple[Change, ...]
    texts: dict[int, str] = field(default_factory=dict)  # key -> the start of its content

    @property
    def fingerprint(self) -> str:
        """A digest of the changes: a run applied from a preview shown earlier (the dashboard's
        form) checks that the plan made now is still the one that was shown."""
        record = [[c.src, c.dst, c.reason] for c in self.changes]
        return hashlib.sha256(json.dumps(record).encode()).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "applied": self.applied, "undone": self.undone,
                "changes": [{"id": str(to_u64(c.src)), "into": str(to_u64(c.dst)),
                             "reason": c.reason, "fact": self.texts.get(c.src, ""),
                             "kept": self.texts.get(c.dst, "")} for c in self.changes]}


@dataclass(frozen=True)
class PastRun:
    """One journaled run: its id, journal state, when it was applied, whether it was undone,
    and how many facts it archived."""

    run: str
    state: str
    applied_at: float
    undone: bool
    changes: int


class ConsolidationService:
    """Consolidation over one open store, with the clock the caller gives."""

    def __init__(self, store: ConsolidationStore, clock: Callable[[], float]) -> None:
        self.store = store
        self._clock = clock

    def _plan(self, now: float, archive_after_days: float) -> Plan:
        if not archive_after_days >= 0:
            raise InvalidInput(f"archive_after_days must be >= 0, got {archive_after_days}")
        facts: dict[int, StoredFact] = {}
        edges: list[Edge] = []
        for item in self.store.export(now, include_internal=False):
            if isinstance(item, Edge):
                edges.append(item)
            else:
                facts[item.key] = item
        return plan(facts, edges, now, archive_after_days * 86_400.0)

    def _texts(self, changes: tuple[Change, ...], now: float) -> dict[int, str]:
        """The start of each named fact's content, for the report."""
        keys = sorted({k for c in changes for k in (c.src, c.dst)})
        cap = limits.CONSOLIDATION_REPORT_CHARS
        return {k: f.content[:cap] for k, f in self.store.facts(keys, now).items()}

    def preview(self, archive_after_days: float = limits.DEFAULT_ARCHIVE_AFTER_DAYS) -> RunReport:
        """What ``apply`` would change now, changing nothing."""
        now = self._clock()
        changes = self._plan(now, archive_after_days).changes
        return RunReport(None, False, False, changes, self._texts(changes, now))

    def apply(self, archive_after_days: float = limits.DEFAULT_ARCHIVE_AFTER_DAYS, *,
              previewed: RunReport | None = None) -> RunReport:
        """Archive what a preview lists (``previewed``, else one made now), journaled, in one
        transaction: if any fact it names is gone, nothing is written."""
        now = self._clock()
        changes = previewed.changes if previewed is not None \
            else self._plan(now, archive_after_days).changes
        if not changes:
            return RunReport(None, True, False, ())
        named = {k for c in changes for k in (c.src, c.dst)}
        gone = named - set(self.store.facts(sorted(named), now))
        if gone:
            raise NotFound(f"{len(gone)} fact(s) of this run are no longer stored "
                           f"(e.g. {to_u64(min(gone))}): preview again")
        record = [[c.src, c.dst, c.reason] for c in changes]
        digest = hashlib.sha256(json.dumps([now, record]).encode()).hexdigest()
        run = f"{RUN_KIND}-{digest[:16]}"
        job = Job(run, RUN_KIND, "accepted", digest, now, now, payload={"changes": record})
        self.store.create_job(job, max_pending=limits.MAX_PENDING_CONSOLIDATIONS).result()
        edges = tuple((c.src, c.dst, ARCHIVED_RELATION) for c in changes)
        self.store.write_graph(GraphWrite(now=now, edges=edges), job=run,
                               result={"changes": record, "undone": False}).result()
        return RunReport(run, True, False, changes, self._texts(changes, now))

    def undo(self, run: str) -> RunReport:
        """Remove the edges run ``run`` added, exactly; the journal entry is marked undone."""
        job = self.store.get_job(run) if isinstance(run, str) else None
        if job is None or job.kind != RUN_KIND:
            raise NotFound(f"no consolidation run {run!r}")
        if job.state != "committed" or job.result is None:
            raise InvalidInput(f"consolidation run {run!r} did not apply (state {job.state})")
        changes = tuple(Change(int(s), int(d), str(r)) for s, d, r in job.result["changes"])
        for c in changes:
            self.store.unrelate(c.src, c.dst, ARCHIVED_RELATION).result()
        if not job.result.get("undone"):
            self.store.update_job(run, self._clock(),
                                  result={**job.result, "undone": True}).result()
        return RunReport(run, False, True, changes, self._texts(changes, self._clock()))

    def history(self, limit: int = limits.CONSOLIDATION_HISTORY) -> list[PastRun]:
        """The journaled runs, newest first (at most ``limit``): applied, undone, or left
        ``accepted`` by a process killed before its transaction (those applied nothing)."""
        out = []
        for job in self.store.recent_jobs(RUN_KIND, limit):
            result = job.result or {}
            changes = result.get("changes") or (job.payload or {}).get("changes") or []
            out.append(PastRun(job.id, job.state, job.created_at, bool(result.get("undone")),
                               len(changes)))
        return out

    def report(self, run: str, shown: int = limits.CONSOLIDATION_REPORT_SHOWN) -> RunReport:
        """A past run's report: its changes (the first ``shown`` with their texts)."""
        job = self.store.get_job(run) if isinstance(run, str) else None
        if job is None or job.kind != RUN_KIND:
            raise NotFound(f"no consolidation run {run!r}")
        result = job.result or {}
        record = result.get("changes") or (job.payload or {}).get("changes") or []
        changes = tuple(Change(int(s), int(d), str(r)) for s, d, r in record)
        texts = self._texts(changes[:max(shown, 0)], self._clock())
        return RunReport(run, job.state == "committed", bool(result.get("undone")), changes,
                         texts)

    def runs(self) -> list[Job]:
        """Not-yet-committed runs (a run killed before its transaction: nothing was applied)."""
        return self.store.pending_jobs(RUN_KIND, limits.MAX_PENDING_CONSOLIDATIONS)


def is_archived(store: FactStore, key: int, now: float) -> bool:
    """Whether fact ``key`` has been consolidated into another (an edge ``consolidated_into``)."""
    return any(rel == ARCHIVED_RELATION for _, rel in store.out_edges(key, now, limits.MAX_ARCHIVE_EDGE_SCAN))

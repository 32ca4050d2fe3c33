"""ConsolidationService: preview a run, apply it in one transaction journaled as a job, undo it.

The journal is a durable job of kind ``consolidate`` whose result lists the edges the run added
and the confidences it lowered. A run goes through phases (``planned``, ``journaled``: the job
is written, ``applied``: the edges, the decays and the job's commit in ONE transaction), so a run
killed at any point leaves either nothing or the whole run. Undo is one transaction too: it
removes exactly those edges, gives the confidences back and marks the entry undone (a second
undo changes nothing). ``on_phase`` observes the phases (the crash tests kill a run at each).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from velesmem import limits
from velesmem.consolidate.plan import ARCHIVED_RELATION, Change, Decay, Plan, plan
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import to_u64
from velesmem.store.roles import FactStore, JobStore, MaintenanceStore
from velesmem.store.types import (
    CAUSE_DECAY,
    CAUSE_DECAY_UNDONE,
    Edge,
    GraphWrite,
    Job,
    StoredFact,
)

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
    decays: tuple[Decay, ...] = ()

    @property
    def fingerprint(self) -> str:
        """A digest of the changes: a run applied from a preview shown earlier (the dashboard's
        form) checks that the plan made now is still the one that was shown."""
        record: list[Any] = [[c.src, c.dst, c.reason] for c in self.changes]
        if self.decays:
            record.append([[d.key, d.delta] for d in self.decays])
        return hashlib.sha256(json.dumps(record).encode()).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "applied": self.applied, "undone": self.undone,
                "changes": [{"id": str(to_u64(c.src)), "into": str(to_u64(c.dst)),
                             "reason": c.reason, "fact": self.texts.get(c.src, ""),
                             "kept": self.texts.get(c.dst, "")} for c in self.changes],
                "decayed": [{"id": str(to_u64(d.key)), "confidence_delta": d.delta,
                             "reason": "no feedback and not written for the decay age",
                             "fact": self.texts.get(d.key, "")} for d in self.decays]}


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

    def __init__(self, store: ConsolidationStore, clock: Callable[[], float], *,
                 on_phase: Callable[[str], None] | None = None) -> None:
        self.store = store
        self._clock = clock
        self._on_phase = on_phase

    def _phase(self, name: str) -> None:
        if self._on_phase is not None:
            self._on_phase(name)

    def _plan(self, now: float, archive_after_days: float,
              decay_after_days: float | None) -> Plan:
        if not archive_after_days >= 0:
            raise InvalidInput(f"archive_after_days must be >= 0, got {archive_after_days}")
        if decay_after_days is not None and not decay_after_days >= 0:
            raise InvalidInput(f"decay_after_days must be >= 0, got {decay_after_days}")
        facts: dict[int, StoredFact] = {}
        edges: list[Edge] = []
        for item in self.store.export(now, include_internal=False):
            if isinstance(item, Edge):
                edges.append(item)
            else:
                facts[item.key] = item
        decay = None if not decay_after_days else decay_after_days * 86_400.0
        return plan(facts, edges, now, archive_after_days * 86_400.0, decay)

    def _texts(self, changes: tuple[Change, ...], now: float,
               decays: tuple[Decay, ...] = ()) -> dict[int, str]:
        """The start of each named fact's content, for the report."""
        keys = sorted({k for c in changes for k in (c.src, c.dst)} | {d.key for d in decays})
        cap = limits.CONSOLIDATION_REPORT_CHARS
        return {k: f.content[:cap] for k, f in self.store.facts(keys, now).items()}

    def preview(self, archive_after_days: float = limits.DEFAULT_ARCHIVE_AFTER_DAYS,
                decay_after_days: float | None = None) -> RunReport:
        """What ``apply`` would change now, changing nothing (``decay_after_days`` None or 0:
        no decay)."""
        now = self._clock()
        p = self._plan(now, archive_after_days, decay_after_days)
        return RunReport(None, False, False, p.changes, self._texts(p.changes, now, p.decays),
                         p.decays)

    def apply(self, archive_after_days: float = limits.DEFAULT_ARCHIVE_AFTER_DAYS,
              decay_after_days: float | None = None, *,
              previewed: RunReport | None = None) -> RunReport:
        """Archive and decay what a preview lists (``previewed``, else one made now),
        journaled, in one transaction: if any fact it names is gone, nothing is written."""
        now = self._clock()
        if previewed is not None:
            changes, decays = previewed.changes, previewed.decays
        else:
            p = self._plan(now, archive_after_days, decay_after_days)
            changes, decays = p.changes, p.decays
        self._phase("planned")
        if not changes and not decays:
            return RunReport(None, True, False, ())
        named = {k for c in changes for k in (c.src, c.dst)} | {d.key for d in decays}
        gone = named - set(self.store.facts(sorted(named), now))
        if gone:
            raise NotFound(f"{len(gone)} fact(s) of this run are no longer stored "
                           f"(e.g. {to_u64(min(gone))}): preview again")
        record = [[c.src, c.dst, c.reason] for c in changes]
        decayed = [[d.key, d.delta] for d in decays]
        digest = hashlib.sha256(json.dumps([now, record, decayed]).encode()).hexdigest()
        run = f"{RUN_KIND}-{digest[:16]}"
        job = Job(run, RUN_KIND, "accepted", digest, now, now,
                  payload={"changes": record, "decays": decayed})
        self.store.create_job(job, max_pending=limits.MAX_PENDING_CONSOLIDATIONS).result()
        self._phase("journaled")
        edges = tuple((c.src, c.dst, ARCHIVED_RELATION) for c in changes)
        self.store.write_graph(
            GraphWrite(now=now, edges=edges,
                       confidence_deltas=tuple((d.key, d.delta) for d in decays),
                       confidence_cause=CAUSE_DECAY),
            job=run, result={"changes": record, "decays": decayed, "undone": False}).result()
        self._phase("applied")
        return RunReport(run, True, False, changes, self._texts(changes, now, decays), decays)

    def undo(self, run: str) -> RunReport:
        """Remove the edges run ``run`` added and give back the confidence it took, exactly,
        and mark the journal entry undone: one transaction. A second undo changes nothing."""
        job = self.store.get_job(run) if isinstance(run, str) else None
        if job is None or job.kind != RUN_KIND:
            raise NotFound(f"no consolidation run {run!r}")
        if job.state != "committed" or job.result is None:
            raise InvalidInput(f"consolidation run {run!r} did not apply (state {job.state})")
        changes = tuple(Change(int(s), int(d), str(r)) for s, d, r in job.result["changes"])
        decays = tuple(Decay(int(k), float(d)) for k, d in job.result.get("decays") or [])
        now = self._clock()
        self._phase("undo-read")
        if not job.result.get("undone"):
            self.store.write_graph(
                GraphWrite(now=now,
                           unlink=tuple((c.src, c.dst, ARCHIVED_RELATION) for c in changes),
                           confidence_deltas=tuple((d.key, -d.delta) for d in decays),
                           confidence_cause=CAUSE_DECAY_UNDONE),
                job=run, result={**job.result, "undone": True}).result()
        self._phase("undone")
        return RunReport(run, False, True, changes, self._texts(changes, now, decays), decays)

    def history(self, limit: int = limits.CONSOLIDATION_HISTORY) -> list[PastRun]:
        """The journaled runs, newest first (at most ``limit``): applied, undone, or left
        ``accepted`` by a process killed before its transaction (those applied nothing)."""
        out = []
        for job in self.store.recent_jobs(RUN_KIND, limit):
            result = job.result or {}
            changes = result.get("changes") or (job.payload or {}).get("changes") or []
            decays = result.get("decays") or (job.payload or {}).get("decays") or []
            out.append(PastRun(job.id, job.state, job.created_at, bool(result.get("undone")),
                               len(changes) + len(decays)))
        return out

    def report(self, run: str, shown: int = limits.CONSOLIDATION_REPORT_SHOWN) -> RunReport:
        """A past run's report: its changes (the first ``shown`` with their texts)."""
        job = self.store.get_job(run) if isinstance(run, str) else None
        if job is None or job.kind != RUN_KIND:
            raise NotFound(f"no consolidation run {run!r}")
        result = job.result or {}
        record = result.get("changes") or (job.payload or {}).get("changes") or []
        changes = tuple(Change(int(s), int(d), str(r)) for s, d, r in record)
        decays = tuple(Decay(int(k), float(d)) for k, d in
                       result.get("decays") or (job.payload or {}).get("decays") or [])
        texts = self._texts(changes[:max(shown, 0)], self._clock(), decays[:max(shown, 0)])
        return RunReport(run, job.state == "committed", bool(result.get("undone")), changes,
                         texts, decays)

    def runs(self) -> list[Job]:
        """Not-yet-committed runs (a run killed before its transaction: nothing was applied)."""
        return self.store.pending_jobs(RUN_KIND, limits.MAX_PENDING_CONSOLIDATIONS)


def is_archived(store: FactStore, key: int, now: float) -> bool:
    """Whether fact ``key`` has been consolidated into another (an edge ``consolidated_into``)."""
    return any(rel == ARCHIVED_RELATION for _, rel in store.out_edges(key, now, limits.MAX_ARCHIVE_EDGE_SCAN))

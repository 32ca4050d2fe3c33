"""Online embedding migration: re-embed the store into a second space while the first serves.

``start`` loads and probes the target embedder, records the job and an empty embedding space
beside the serving one, and turns the store's journal on: from then on every write to a fact is
journaled (a full journal refuses the write rather than lose track of it). The worker copies
every fact into the new space in batches (each batch recorded), then replays the journal until
it converges, and cuts over: requests pause (measured, within ``pause_budget_ms``), the last
journal entries are replayed, the new space is verified complete and becomes the serving one —
vectors, index and provenance in one transaction — and the daemon serves with the new embedder.
A crash in any phase recovers at start to one consistent space: before the flip the old one
serves and the job waits for ``migration_recover`` (or ``migration_cancel``); after it, the new
one, and the job completes. Edges and metadata are shared by both spaces, so only vectors move.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from velesmem import limits
from velesmem.config import EMBEDDERS, Settings
from velesmem.embed import Embedder, load_embedder
from velesmem.errors import Internal, InvalidInput, VelesmemError
from velesmem.migration.job import (
    CUTTING_OVER,
    DEFAULTS,
    KIND,
    TERMINAL,
    MigrationJob,
    empty_progress,
)
from velesmem.store import EmbeddingStore, FactStore, Identity, Job, JobStore, SpaceStore



class MigrationStore(SpaceStore, EmbeddingStore, JobStore, FactStore, Protocol):
    """The store roles a migration uses: the space it builds with its journal, the serving space,
    its durable job, and the facts it copies."""


WITNESS_TEXT = "velesmem embedding witness: the quick brown fox jumps over the lazy dog"
WITNESS_MIN_COSINE = 0.99
PAUSE_ENV = "VELESMEM_INTERNAL_MIGRATION_PAUSE"  # tests: hold the worker in a phase
log = logging.getLogger(__name__)

Pause = Callable[[float], AbstractContextManager[float]]


def _warm(embedder: Embedder) -> None:
    warm = getattr(embedder, "warm", None)
    if callable(warm):
        warm()


def witness(embedder: Embedder) -> list[float]:
    """The embedder's vector of a fixed probe text: a model changed under its name differs."""
    return [round(float(x), 6) for x in embedder.embed([WITNESS_TEXT])[0]]


def _target_embedder(settings: Settings, backend: str, given: str) -> Embedder:
    """The embedder ``migration_start`` would migrate to; InvalidInput naming ``target_backend``
    when it is no embedder, or one this daemon cannot run (not configured, extra missing)."""
    if backend not in EMBEDDERS:
        raise InvalidInput(f"target_backend {given!r} is not an embedder: use one of "
                           f"{', '.join(EMBEDDERS)}")
    try:  # local_model=None: a migration to local goes to its newest graph
        return load_embedder(settings.with_overrides(embedder=backend, local_model=None))
    except Internal as exc:
        raise InvalidInput(f"target_backend {given!r} cannot be used by this daemon: "
                           f"{exc.message}") from exc


def _cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape or not va.size:
        return -1.0
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb) or 1.0))


def _limit(args: dict[str, Any], name: str, low: int, high: int) -> int:
    value = args.get(name)
    if value is None:
        return DEFAULTS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}, got {value}")
    return value


class MigrationService:
    """The four migration tools and the worker behind them (the Runtime runs ``run``)."""

    def __init__(self, store: MigrationStore, settings: Settings, clock: Callable[[], float],
                 serving: Callable[[], Embedder], swap: Callable[[Embedder], None],
                 pause: Pause) -> None:
        self.store = store
        self.settings = settings
        self._clock = clock
        self._serving = serving
        self._swap = swap
        self._pause = pause
        self._lock = threading.RLock()
        self._job: MigrationJob | None = None
        self._target: Embedder | None = None
        self.running = False  # the worker is advancing the current job
        self.wake = threading.Event()
        self._load()

    # --- the record --------------------------------------------------------------------------
    def _load(self) -> None:
        """The current job: the newest migration record (terminal ones too, for status)."""
        jobs = self.store.pending_jobs(KIND, 10)
        record = jobs[0] if jobs else None
        if record is None:
            latest = self.store.get_job(f"{KIND}:latest")
            if latest is not None and latest.result is not None:
                record = self.store.get_job(str(latest.result.get("id", "")))
        if record is not None and record.result is not None:
            self._job = MigrationJob.from_record(record.result["job"])

    def _save(self, job: MigrationJob) -> None:
        now = float(self._clock())
        state = "committed" if job.phase == "committed" else (
            "failed" if job.phase == "cancelled" else "running")
        self.store.update_job(job.job_id, now, state=state,
                              result={"job": job.to_record()}).result()
        self._job = job

    def _envelope(self) -> dict[str, Any]:
        job = self._job
        return {"configured": True,
                "job": None if job is None else job.to_wire(self.running and
                                                           job.phase not in TERMINAL)}

    # --- the tools ---------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._lock:
            return self._envelope()

    def start(self, target_backend: Any, pause_budget_ms: Any,
              **work: Any) -> dict[str, Any]:
        """Validate, load and probe the target, record the job and its space, start capturing."""
        if not isinstance(target_backend, str) or not target_backend.strip():
            raise InvalidInput("target_backend must name an embedder: hash, local, ollama or "
                               "openai")
        if isinstance(pause_budget_ms, bool) or not isinstance(pause_budget_ms, int):
            raise InvalidInput("pause_budget_ms must be an integer number of milliseconds")
        if not 1 <= pause_budget_ms <= limits.MAX_MIGRATION_PAUSE_BUDGET_MS:
            raise InvalidInput(f"pause_budget_ms must be between 1 and "
                               f"{limits.MAX_MIGRATION_PAUSE_BUDGET_MS}, got {pause_budget_ms}")
        unknown = set(work) - set(DEFAULTS)
        if unknown:
            raise InvalidInput(f"unknown work limit(s): {', '.join(sorted(unknown))}")
        work_limits = {
            "journal_max_bytes": _limit(work, "journal_max_bytes", 1024, 1 << 40),
            "fact_batch": _limit(work, "fact_batch", 1, limits.MAX_MIGRATION_BATCH),
            "replay_batch": _limit(work, "replay_batch", 1, limits.MAX_MIGRATION_BATCH),
            "edge_cap": _limit(work, "edge_cap", 1, limits.MAX_ENTITY_SCAN_EDGES * 16),
            "observation_window": _limit(work, "observation_window", 1,
                                         limits.MAX_MIGRATION_OBSERVATION_WINDOW),
            "verification_reserve_ms": _limit(work, "verification_reserve_ms", 0,
                                              limits.MAX_MIGRATION_PAUSE_BUDGET_MS),
        }
        if work_limits["verification_reserve_ms"] >= pause_budget_ms:
            raise InvalidInput("verification_reserve_ms must be below pause_budget_ms: the "
                               "cutover needs room to replay the last writes")
        with self._lock:
            if self._job is not None and self._job.phase not in TERMINAL:
                raise InvalidInput(f"a migration is already {self._job.phase} (epoch "
                                   f"{self._job.epoch_id}): cancel or finish it first")
            if self.store.building_space() is not None:
                raise InvalidInput("a generated destination (an embedding space being built) "
                                   "already exists: migration_recover or migration_cancel it")
            backend = target_backend.strip().lower()
            target = _target_embedder(self.settings, backend, target_backend)
            _warm(target)
            source = self._serving()
            if (target.model, target.dimension) == (source.model, source.dimension):
                raise InvalidInput(f"the store is already served by {source.model} "
                                   f"({source.dimension} dims): nothing to migrate")
            now = float(self._clock())
            serving_space = self.store.serving_space()
            probe = witness(target)
            space = self.store.create_space(Identity(target.model, target.dimension),
                                            tuple(probe), now).result()
            epoch = secrets.token_hex(8)
            job = MigrationJob(
                epoch, "prepared", backend, target.model, target.dimension, probe,
                source.model, source.dimension, space.id,
                self.store.space_destination(space.id), pause_budget_ms, work_limits, now,
                source_space_id=None if serving_space is None else serving_space.id)
            self.store.create_job(Job(job.job_id, KIND, "running", epoch, now, now,
                                      result={"job": job.to_record()}),
                                  max_pending=1).result()
            self._remember_latest(job, now)
            self._job = job
            self.store.start_journal(epoch, work_limits["journal_max_bytes"]).result()
            job.phase = "capturing"
            self._save(job)
            self._target = target
            self.running = True
        self.wake.set()
        return self._envelope()

    def _remember_latest(self, job: MigrationJob, now: float) -> None:
        """Point ``migration:latest`` at this job (so status outlives its end)."""
        latest = Job(f"{KIND}:latest", "migration-pointer", "committed", job.epoch_id, now, now,
                     result={"id": job.job_id})
        created = self.store.create_job(latest, max_pending=1 << 30).result()[1]
        if not created:
            self.store.update_job(latest.id, now, result={"id": job.job_id}).result()

    def cancel(self) -> dict[str, Any]:
        with self._lock:
            job = self._job
            if job is None or job.phase in TERMINAL:
                raise InvalidInput("no migration is in progress")
            if job.phase in CUTTING_OVER:
                job.recovery_action = ("the cutover has begun: it completes at the next start "
                                       "(restart the daemon)")
                self._save(job)
                raise InvalidInput(f"the migration is {job.phase}: it can no longer be "
                                   f"cancelled; {job.recovery_action}")
            job.cancellation_requested = True
            self._save(job)
            if not self.running:
                self._finish_cancel(job)
        self.wake.set()
        return self._envelope()

    def recover(self) -> dict[str, Any]:
        """Resume a stopped job. With no job, or one already running, there is nothing to do:
        the answer is the contract's ``{configured, job}`` as it stands (job null when none).
        A terminal job, or one in its cutover, is refused with what to do instead."""
        with self._lock:
            job = self._job
            if job is None:
                return self._envelope()
            if job.phase in TERMINAL:
                raise InvalidInput(f"the last migration is {job.phase}: there is nothing to "
                                   "recover (migration_start begins a new one)")
            if job.phase in CUTTING_OVER:
                raise InvalidInput(f"the migration is {job.phase}: startup's crash-safe cutover "
                                   "recovery completes it (restart the daemon)")
            if self.running:
                return self._envelope()
            local_model = job.target_model if job.target_backend == "local" else None
            target = load_embedder(self.settings.with_overrides(embedder=job.target_backend,
                                                                local_model=local_model))
            _warm(target)
            if (target.model, target.dimension) != (job.target_model, job.target_dimension):
                raise InvalidInput(f"the configured {job.target_backend} embedder is now "
                                   f"{target.model} ({target.dimension} dims), not the "
                                   f"migration's {job.target_model} ({job.target_dimension}): "
                                   "configure that one again, or cancel")
            if _cosine(witness(target), job.target_witness) < WITNESS_MIN_COSINE:
                raise InvalidInput(f"{job.target_model} answers differently than when the "
                                   "migration started (its witness vector changed): cancel and "
                                   "start again")
            self.store.load_building_index()
            job.last_error = None
            job.recovery_action = None
            self._save(job)
            self._target = target
            self.running = True
        self.wake.set()
        return self._envelope()

    # --- start-up recovery -------------------------------------------------------------------
    def recover_at_start(self) -> None:
        """Settle a migration a crash interrupted: finish a cutover whose flip committed, roll
        back to ``cutover_ready`` one whose flip did not; leave earlier phases stopped."""
        job = self._job
        if job is None or job.phase in TERMINAL:
            return
        serving = self.store.serving_space()
        flipped = serving is not None and serving.id == job.space_id
        if job.phase in CUTTING_OVER or flipped:
            if flipped:
                log.info("migration %s: the cutover had committed; completing it", job.epoch_id)
                job.phase = "activated"
                self._save(job)
                self._complete(job)
                return
            log.info("migration %s: the cutover had not committed; the old space serves",
                     job.epoch_id)
            job.phase = "cutover_ready"
        job.recovery_action = "call migration_recover to resume, or migration_cancel"
        job.last_error = job.last_error or "the daemon stopped while the migration ran"
        self._save(job)

    # --- the worker --------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Advance the current job while it runs (the Runtime's migration thread)."""
        while not stop.is_set():
            self.wake.wait(0.5)
            self.wake.clear()
            job = self._job
            if job is None or not self.running or job.phase in TERMINAL:
                continue
            try:
                self._advance(job, stop)
            except _Stopped:
                self.running = False
                return
            except VelesmemError as exc:
                self._stopped_by(job, exc.message)
            except Exception as exc:  # a bug: stop the job, keep the daemon serving
                log.exception("migration %s failed", job.epoch_id)
                self._stopped_by(job, f"{type(exc).__name__}: {exc}")

    def _stopped_by(self, job: MigrationJob, reason: str) -> None:
        with self._lock:
            self.running = False
            job.last_error = reason
            job.recovery_action = "call migration_recover to resume, or migration_cancel"
            self._save(job)
        log.error("migration %s stopped: %s", job.epoch_id, reason)

    def _advance(self, job: MigrationJob, stop: threading.Event) -> None:
        while not stop.is_set() and self.running:
            if job.cancellation_requested:
                self._finish_cancel(job)
                return
            self._hook(job, stop)
            if job.cancellation_requested:
                continue
            if job.phase in ("prepared", "capturing"):
                if job.phase == "prepared":
                    self.store.start_journal(job.epoch_id,
                                             job.work_limits["journal_max_bytes"]).result()
                    job.phase = "capturing"
                    self._save(job)
                if not self._copy_batch(job):
                    job.phase = "base_copied"
                    self._save(job)
            elif job.phase in ("base_copied", "catching_up", "non_converging"):
                self._catch_up(job)
            elif job.phase == "cutover_ready":
                self._cutover(job, stop)
            else:
                return

    def _hook(self, job: MigrationJob, stop: threading.Event) -> None:
        """Tests: hold the worker in the phase PAUSE_ENV names, until the Runtime stops (then
        the job is left as a crash would leave it) or the job is cancelled."""
        if os.environ.get(PAUSE_ENV) == job.phase:
            log.info("migration held in %s (test hook)", job.phase)
            while not stop.wait(0.05):
                if job.cancellation_requested:
                    return
            raise _Stopped

    def _embed(self, texts: list[str]) -> np.ndarray:
        assert self._target is not None
        return self._target.embed(texts)

    def _copy_batch(self, job: MigrationJob) -> bool:
        """Copy the next batch of facts; False once the base copy is done."""
        now = float(self._clock())
        batch = self.store.facts_after(job.cursor, job.work_limits["fact_batch"], now)
        if not batch:
            job.progress["base_edges"] = self.store.counts(now).edges
            return False
        vectors = self._embed([c for _, c in batch])
        self.store.put_vectors(job.space_id, [(k, v) for (k, _), v in zip(batch, vectors)]
                               ).result()
        job.cursor = batch[-1][0]
        job.progress["base_facts"] += len(batch)
        job.progress["batches"] += 1
        job.progress["input_watermark"] = job.cursor
        self._observe(job)
        self._save(job)
        return True

    def _observe(self, job: MigrationJob) -> None:
        _, state = self.store.journal(0)
        job.progress.update(dirty_facts=state.dirty_facts,
                            pending_journal_bytes=state.bytes,
                            dirty_edge_sources=state.dirty_facts)

    def _replay(self, job: MigrationJob, limit: int) -> int:
        """Replay up to ``limit`` journal entries into the new space; how many."""
        entries, _ = self.store.journal(limit)
        if not entries:
            return 0
        keys = list(dict.fromkeys(k for _, k in entries))
        now = float(self._clock())
        live = self.store.facts(keys, now)
        present = [k for k in keys if k in live]
        gone = [k for k in keys if k not in live]
        if present:
            vectors = self._embed([live[k].content for k in present])
            self.store.put_vectors(job.space_id, list(zip(present, vectors))).result()
        if gone:
            self.store.delete_vectors(job.space_id, gone).result()
        self.store.ack_journal(entries[-1][0]).result()
        job.progress["output_watermark"] = entries[-1][0]
        return len(entries)

    def _catch_up(self, job: MigrationJob) -> None:
        batch = job.work_limits["replay_batch"]
        started = time.perf_counter()
        done = self._replay(job, batch)
        per_entry_ms = ((time.perf_counter() - started) * 1000 / done) if done else 0.0
        _, state = self.store.journal(0)
        job.samples = [*job.samples, state.entries][-job.work_limits["observation_window"]:]
        estimate = state.entries * per_entry_ms + job.work_limits["verification_reserve_ms"]
        job.progress["estimated_pause_ms"] = round(estimate, 1)
        self._observe(job)
        window = job.work_limits["observation_window"]
        steady = len(job.samples) == window and all(n <= batch for n in job.samples)
        growing = len(job.samples) == window and job.samples[-1] > job.samples[0] > batch
        if steady and estimate <= job.pause_budget_ms:
            job.phase = "cutover_ready"
        elif growing:
            job.phase = "non_converging"
        else:
            job.phase = "catching_up"
        self._save(job)
        if not done:
            time.sleep(0.05)

    def _cutover(self, job: MigrationJob, stop: threading.Event) -> None:
        budget_s = job.pause_budget_ms / 1000
        job.phase = "quiescing"
        self._save(job)
        self._hook(job, stop)
        flipped = False
        with self._pause(min(budget_s, limits.MIGRATION_PAUSE_WAIT_MS / 1000)) as paused:
            started = time.perf_counter()
            deadline = started + budget_s - job.work_limits["verification_reserve_ms"] / 1000
            while True:
                if not self._replay(job, job.work_limits["replay_batch"]):
                    break
                if time.perf_counter() > deadline:
                    break
            _, state = self.store.journal(0)
            if state.entries == 0:
                try:  # the store re-checks, in its writer, that nothing is left to replay
                    self.store.activate_space(job.space_id, tuple(job.target_witness)).result()
                except Internal as exc:
                    log.info("migration %s: %s", job.epoch_id, exc.message)
                else:
                    job.phase = "activated"
                    self._save(job)
                    assert self._target is not None
                    self._swap(self._target)
                    flipped = True
            elapsed_ms = (time.perf_counter() - started) * 1000 + paused
        job.progress["cutover_ms"] = round(elapsed_ms, 1)
        if not flipped:  # the last writes did not fit the budget: the old space still serves
            job.phase = "catching_up"
            job.samples = []
            job.last_error = (f"cutover aborted after {elapsed_ms:.0f} ms: the journal did not "
                              "drain within pause_budget_ms; catching up again")
            self._save(job)
            return
        self._hook(job, stop)
        self._complete(job)

    def _complete(self, job: MigrationJob) -> None:
        """After the flip: stop capturing, drop the old space, record the commit."""
        self.store.stop_journal().result()
        for space_id in self._old_spaces(job):
            self.store.drop_space(space_id).result()
        job.phase = "committed"
        job.recovery_action = None
        self._save(job)
        self.running = False
        log.info("migration %s committed: the store is served by %s (%d dims); cutover %s ms",
                 job.epoch_id, job.target_model, job.target_dimension,
                 job.progress.get("cutover_ms"))

    def _old_spaces(self, job: MigrationJob) -> Iterator[int]:
        if job.source_space_id is not None and job.source_space_id != job.space_id:
            yield job.source_space_id

    def _finish_cancel(self, job: MigrationJob) -> None:
        """Remove what the migration generated, once its epoch and target check out."""
        space = self.store.building_space()
        if space is not None and (space.id != job.space_id
                                  or space.identity.model != job.target_model):
            raise Internal(f"the space being built ({space.id}, {space.identity.model}) is not "
                           f"this migration's ({job.space_id}, {job.target_model}): left as is")
        self.store.stop_journal().result()
        if space is not None:
            self.store.drop_space(space.id).result()
        job.phase = "cancelled"
        job.cancellation_requested = True
        job.recovery_action = None
        self._save(job)
        self.running = False
        log.info("migration %s cancelled; the generated space was removed", job.epoch_id)


class _Stopped(Exception):
    """The Runtime is closing while the worker is held: the job resumes after the restart."""


def empty() -> dict[str, Any]:
    return {"configured": True, "job": None, "progress": empty_progress()}

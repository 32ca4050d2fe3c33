"""``remember_extracted`` as durable jobs: accept at once, extract in the background, commit once.

A request is validated and recorded (``accepted``) before any model call and answered with its
receipt. The Runtime's worker claims it (``running``), asks the extractor, and persists the
extraction as the job's output *before* the first memory write; the facts, hubs, edges and the
job's ``committed`` state then land in one transaction. So a crash before the output exists
re-asks the model at restart; a crash after it replays the very same extraction, and
content-derived ids make the replay write nothing twice. A failed extraction is a ``failed`` job
with its reason; nothing partial reaches the store. Terminal jobs keep their fingerprint and
result but drop the passage, its metadata and the extraction.

The request id is the SHA-256 (64 lowercase hex digits) of the idempotency key when one is
given, else of the normalized request itself (text, metadata, extractor): retries are
content-addressed either way. A key reused with another payload is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol

from velesmem import limits, validate
from velesmem.config import Settings
from velesmem.embed import Embedder
from velesmem.errors import Internal, InvalidInput, NotFound, VelesmemError
from velesmem.extract import load
from velesmem.extract.graph import extraction_graph
from velesmem.extract.model import Extraction
from velesmem.ids import to_u64
from velesmem.store import FactStore, Job, JobStore


class ExtractionStore(JobStore, FactStore, Protocol):
    """The store roles extraction uses: its durable jobs, and the graph write that commits one."""


KIND = "extract"
REQUEST_ID = re.compile(r"[0-9a-f]{64}")
PAUSE_ENV = "VELESMEM_INTERNAL_EXTRACT_PAUSE"  # tests: hold a job "before_output"/"after_output"
log = logging.getLogger(__name__)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ExtractionService:
    """Accepts, runs and reports extraction jobs over one store."""

    def __init__(self, store: ExtractionStore, embedder: Embedder, settings: Settings,
                 clock: Callable[[], float], today: Callable[[float], int]) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._clock = clock
        self._today = today
        self.wake = threading.Event()  # set when a job is accepted

    def set_embedder(self, embedder: Embedder) -> None:
        """Embed extracted facts with ``embedder`` from now on (after a migration's cutover)."""
        self.embedder = embedder

    # --- the tools ---------------------------------------------------------------------------
    def remember_extracted(self, text: Any, metadata: Any = None, extractor: Any = None,
                           idempotency_key: Any = None, *,
                           author: str | None = None) -> dict[str, Any]:
        """Validate and record a job; return its receipt ``{request_id, state, reused}``. The
        caller's ``author`` (token name) goes into the metadata of every extracted fact."""
        passage = validate.text(text, "text", limits.MAX_FACT_BYTES)
        now = float(self._clock())
        _, meta_json = validate.metadata(metadata, today=self._today(now), author=author)
        name = self._extractor_name(extractor)
        request = {"text": passage, "metadata": json.loads(meta_json), "extractor": name}
        fingerprint = _sha256(validate.dumps(request))
        if idempotency_key is not None:
            key = validate.text(idempotency_key, "idempotency_key",
                                limits.MAX_IDEMPOTENCY_KEY_BYTES)
            request_id = _sha256("key\x1f" + key)
        else:
            request_id = fingerprint
        job = Job(request_id, KIND, "accepted", fingerprint, now, now, payload=request)
        stored, created = self.store.create_job(
            job, max_pending=limits.MAX_PENDING_EXTRACTIONS).result()
        if stored.fingerprint != fingerprint:
            raise InvalidInput("idempotency_key was already used for a different request: use "
                               "a new key for a new passage (or resend the original unchanged)")
        if created:
            self.wake.set()
        return {"request_id": request_id, "state": stored.state, "reused": not created}

    def extraction_status(self, request_id: Any) -> dict[str, Any]:
        """The durable state of a job: its ids once committed, its reason once failed."""
        if not isinstance(request_id, str) or not REQUEST_ID.fullmatch(request_id):
            raise InvalidInput("request_id must be the 64-character lowercase hexadecimal id "
                               "from remember_extracted's receipt")
        job = self.store.get_job(request_id)
        if job is None or job.kind != KIND:
            raise NotFound(f"no extraction job {request_id}: check the receipt's request_id")
        ids: list[int] = []
        skipped = None
        if job.state == "committed" and job.result is not None:
            ids = [int(i) for i in job.result.get("ids", [])]
            skipped = int(job.result.get("skipped_over_cap", 0))
        return {"request_id": request_id, "state": job.state, "ids": ids,
                "ids_str": [str(i) for i in ids], "skipped_over_cap": skipped,
                "error": job.error if job.state == "failed" else None}

    def _extractor_name(self, extractor: Any) -> str:
        if extractor is not None:
            if not isinstance(extractor, str):
                raise InvalidInput(f"extractor must be a string, got {type(extractor).__name__}")
            chosen = extractor.strip().lower()
        else:
            chosen = (self.settings.extractor or "").strip().lower()
        load(chosen or None, self.settings).close()  # Internal: unknown, unconfigured, no model
        return chosen

    # --- the worker --------------------------------------------------------------------------
    def run_pending(self, stop: threading.Event) -> int:
        """Run every job not yet terminal (resumed ones first), then every newly accepted one;
        return how many ran."""
        done = 0
        for job in self.store.pending_jobs(KIND, limits.MAX_PENDING_EXTRACTIONS):
            if stop.is_set():
                return done
            if job.state == "running":
                self._run(job, stop)
                done += 1
        while not stop.is_set():
            claimed = self.store.claim_job(KIND, float(self._clock())).result()
            if claimed is None:
                break
            self._run(claimed, stop)
            done += 1
        return done

    def _run(self, job: Job, stop: threading.Event) -> None:
        try:
            self._process(job, stop)
        except _Stopped:
            return  # the job stays running: the next start resumes it
        except VelesmemError as exc:
            if stop.is_set():
                return
            self._fail(job, exc.message)
        except Exception as exc:  # a bug: the job fails with it, the worker goes on
            if stop.is_set():
                return
            log.exception("extraction job %s failed", job.id)
            self._fail(job, f"internal error: {type(exc).__name__}: {exc}")

    def _fail(self, job: Job, reason: str) -> None:
        log.info("extraction job %s failed: %s", job.id[:12], reason)
        self.store.update_job(job.id, float(self._clock()), state="failed", error=reason).result()

    def _process(self, job: Job, stop: threading.Event) -> None:
        if job.payload is None:
            raise Internal("the job's request is gone (it was already terminal)")
        output = job.output
        if output is None:
            self._pause("before_output", stop)
            extractor = load(job.payload["extractor"], self.settings)
            try:
                extraction = extractor.extract(job.payload["text"])
            finally:
                extractor.close()
            extraction, skipped = extraction.within_cap()
            output = json.dumps({"extraction": extraction.to_json(), "skipped": skipped})
            self.store.update_job(job.id, float(self._clock()), output=output).result()
            self._pause("after_output", stop)
        doc = json.loads(output)
        extraction = Extraction.from_json(doc["extraction"])
        now = float(self._clock())
        meta = dict(job.payload["metadata"])
        ttl = self.settings.default_ttl
        graph = extraction_graph(extraction, metadata_json=validate.dumps(meta), now=now,
                                 expires_at=None if ttl is None else now + ttl,
                                 embed=self.embedder.embed)
        ids = [to_u64(w.key) for w in graph.facts]
        result = {"ids": ids, "skipped_over_cap": int(doc["skipped"])}
        self.store.write_graph(graph, job=job.id, result=result).result()
        log.info("extraction job %s committed: %d facts, %d hubs, %d edges", job.id[:12],
                 len(graph.facts), len(graph.hubs), len(graph.edges))

    def _pause(self, point: str, stop: threading.Event) -> None:
        if os.environ.get(PAUSE_ENV) == point:
            log.info("extraction paused %s (test hook)", point)
            while not stop.wait(0.05):
                pass
            raise _Stopped

    def pending(self) -> int:
        return len(self.store.pending_jobs(KIND, limits.MAX_PENDING_EXTRACTIONS))


class _Stopped(Exception):
    """The Runtime is closing while a job is held: leave it for the next start."""


__all__ = ["KIND", "ExtractionService"]

"""The single writer thread, with group commit.

Callers submit jobs; the thread takes every job pending (up to ``MAX_BATCH``), runs each inside
its own SAVEPOINT of one ``BEGIN IMMEDIATE`` transaction, commits once, then applies the jobs'
in-memory effects (FAISS updates) in order and only then answers each caller. So a write is
acknowledged only after its transaction committed, a failing job changes nothing (its savepoint
is rolled back) and does not disturb the others in its batch, and N concurrent callers pay for
one fsync-free WAL commit instead of N.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from velesmem.errors import Internal
from velesmem.spawner import Spawner

T = TypeVar("T")
MAX_BATCH = 256
log = logging.getLogger(__name__)

Effect = Callable[[], None]
_WAKE = object()  # queued with a background job, so the thread looks at that queue


@dataclass
class Outcome(Generic[T]):
    """What a job returns: its result and an optional effect to apply after the commit."""

    result: T
    effect: Effect | None = None


Job = Callable[[sqlite3.Connection], Outcome[Any]]


class Writer:
    """Serialises every write of the store through one thread and one connection.

    ``before_commit`` runs inside each batch's transaction after its jobs (the store persists
    its sequence high-water mark there). Jobs submitted before ``start()`` wait in the queue.
    """

    def __init__(self, conn: sqlite3.Connection,
                 before_commit: Callable[[sqlite3.Connection], None] | None = None,
                 name: str = "velesmem-writer") -> None:
        self._conn = conn
        self._before_commit = before_commit
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()  # jobs, _WAKE, None (stop)
        self._background: queue.SimpleQueue[tuple[Job, Future[Any]]] = queue.SimpleQueue()
        self._closed = False
        self._close_lock = threading.Lock()
        self._name = name
        self._thread: threading.Thread | None = None

    def start(self, spawner: Spawner) -> None:
        """Run the jobs on a thread of ``spawner`` from now on (idempotent)."""
        with self._close_lock:
            if self._thread is None and not self._closed:
                self._thread = spawner.thread(self._name, self._run)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, job: Callable[[sqlite3.Connection], Outcome[T]], *,
               background: bool = False) -> Future[T]:
        """Queue ``job``; the future resolves to its result once committed (or its error).

        A ``background`` job (autograph's links) runs alone, and only when no other job is
        waiting: it never delays an acknowledgement by more than the one in progress."""
        future: Future[T] = Future()
        with self._close_lock:
            if self._closed:
                raise Internal("the store is closed")
            if background:
                self._background.put((job, future))
                self._queue.put(_WAKE)
            else:
                self._queue.put((job, future))
        return future

    def close(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        # Join a started thread even when it is no longer alive: it may already have taken the
        # stop just queued and ended, and running the loop here then would wait on an empty queue.
        if self._thread is not None:
            self._thread.join()
        else:  # never started: run what was queued here
            self._run()

    def _run(self) -> None:
        stop = False
        while not stop:
            if self._background.empty():
                first = self._queue.get()
            else:
                try:
                    first = self._queue.get_nowait()
                except queue.Empty:
                    first = _WAKE
            if first is None:
                break
            batch = [] if first is _WAKE else [first]
            while len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                if item is not _WAKE:
                    batch.append(item)
            if batch:
                self._run_batch(batch)
            elif not self._background.empty():
                self._run_batch([self._background.get_nowait()])
        while not self._background.empty():  # closing: nothing queued is left unanswered
            self._run_batch([self._background.get_nowait()])

    def _run_batch(self, batch: list[tuple[Job, Future[Any]]]) -> None:
        conn = self._conn
        results: list[tuple[bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for n, (job, _) in enumerate(batch):
                conn.execute(f"SAVEPOINT j{n}")
                try:
                    outcome = job(conn)
                    conn.execute(f"RELEASE j{n}")
                    results.append((True, outcome))
                except BaseException as exc:  # noqa: BLE001 — handed to the caller
                    conn.execute(f"ROLLBACK TO j{n}")
                    conn.execute(f"RELEASE j{n}")
                    results.append((False, exc))
            if self._before_commit is not None:
                self._before_commit(conn)
            conn.execute("COMMIT")
        except BaseException as exc:  # noqa: BLE001 — the commit failed: nothing is acknowledged
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            log.error("a store write batch failed to commit (%d calls): %s", len(batch), exc)
            err = Internal(f"store write failed: {exc}")
            for _, future in batch:
                future.set_exception(err)
            return
        for (ok, value), (_, future) in zip(results, batch):
            if not ok:
                future.set_exception(value)
                continue
            try:
                if value.effect is not None:
                    value.effect()
            except Exception:  # the write is durable; the index catches up on the next open
                log.exception("applying a committed write to the index failed")
            future.set_result(value.result)

"""The Runtime: the one object that owns a velesmem process's store, services and threads.

    starting ──open()──▶ warming ──(index loaded, model loaded)──▶ ready ──drain()──▶ draining
                                                                                  ──close()──▶ closed

``open()`` opens and locks the store (fast: a second daemon on the same
store fails here at once) and builds the services. ``start()`` starts the background workers:
the store's writer, the warmer (loads the embedding model and the serving space's vector index,
retrying a remote embedder that is not reachable yet, then embeds the backlog: facts stored
without a vector meanwhile) and the TTL sweeper (purges expired facts, so reads never write).
While ``warming`` the daemon serves every memory tool: a write is acknowledged once the fact is
durable (its vector follows from the backlog), recall ranks by text alone with a ``warnings``
entry saying vector search is loading, and switches to hybrid by itself once ``ready``. Only
the migration tools, which need the serving embedder itself, wait for it. ``close()`` never
waits unboundedly for the warmer (a model load cannot be interrupted; its thread is a daemon).
Nothing else in velesmem opens the store or starts a thread.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from velesmem.config import Settings
from velesmem.errors import Internal, SpaceMoved, VelesmemError, Warming
from velesmem.logtail import RecentErrors
from velesmem.store.protocol import SharedStore

if TYPE_CHECKING:
    from velesmem.context.ingest import IngestRoots
    from velesmem.context.service import ContextService
    from velesmem.embed import Embedder
    from velesmem.memory.service import MemoryService
    from velesmem.store import Identity, Store, WarmProgress

T = TypeVar("T")
log = logging.getLogger("velesmem")

LOG_PREFIX = "[velesdb-memory]"
FOLLOW_ENV = "VELESMEM_INTERNAL_FOLLOW"  # tests: "off" leaves the move to each call's retry
WARMING_WAIT_S = 10.0  # after this long, a call that needs the embedder is told why it failed
WARM_JOIN_S = 2.0  # longest close() waits for the warmer (a model load is not interruptible)
WARM_RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # back-off while an embedder is unreachable
WARM_THREAD = "velesmem-warm"
# A serving process (``start(defer_warm=True)``) starts loading an embedder that loads slowly (the
# local model: importing onnxruntime and the tokenizer holds the GIL for ~0.3 s) once its first
# tool call is answered, or after this long without one: the first call (answered from text
# search while warming, as always) does not compete with the load for the CPU.
WARM_GRACE_S = 1.0
SWEEP_MAX_SLEEP_S = 60.0  # the sweeper looks at the clock at least this often
SEARCH_THREADS = 16  # run hybrid recall's vector side beside its text side
FOLLOW_PAUSE_S = 1.0  # following another daemon's migration holds new calls at most this long
LIBRARY_LOG_EVERY_S = 30.0  # a library's repeated log line (psycopg's pool) at most this often


class State(str, enum.Enum):
    STARTING = "starting"
    WARMING = "warming"
    READY = "ready"
    DRAINING = "draining"
    CLOSED = "closed"


def worker_threads() -> int:
    """Threads for CPU-heavy tool work (embedding, ranking, compiling): a few per core."""
    return max(4, 2 * (os.cpu_count() or 1))


class _Formatter(logging.Formatter):
    """``[velesdb-memory] message``; a traceback only when the logger is at DEBUG."""

    def format(self, record: logging.LogRecord) -> str:
        message = f"{LOG_PREFIX} {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if logging.getLogger("velesmem").isEnabledFor(logging.DEBUG):
                message += "\n" + self.formatException(record.exc_info)
            else:
                message += f" ({type(exc).__name__}: {exc})"
        return message


class _EveryS(logging.Filter):
    """Let one record per logger and message pattern through every ``seconds`` (a pool that
    retries a dead server logs the same line many times a second)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self._last: dict[tuple[str, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = (record.name, str(record.msg)), time.monotonic()
        if now - self._last.get(key, -self.seconds) < self.seconds:
            return False
        self._last[key] = now
        return True


_logging_lock = threading.Lock()
_HANDLER_NAME = "velesmem-stderr"


def configure_logging(level: str | int = logging.INFO) -> None:
    """Send velesmem's (and FastMCP's) log records to stderr, one line each (idempotent)."""
    with _logging_lock:
        root = logging.getLogger("velesmem")
        if any(h.get_name() == _HANDLER_NAME for h in root.handlers):
            root.setLevel(level)
            return
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(_Formatter())
        root.addHandler(handler)
        root.setLevel(level)
        root.propagate = False
        # FastMCP brings its own multi-line (Rich) handlers: the daemon log gets plain lines.
        fastmcp = logging.getLogger("fastmcp")
        fastmcp.handlers = [handler]
        fastmcp.propagate = False
        fastmcp.setLevel(logging.WARNING)
        sdk = logging.getLogger("mcp")  # the SDK logs every request at INFO
        sdk.addHandler(handler)
        sdk.setLevel(logging.WARNING)
        sdk.propagate = False
        # psycopg's pool logs each failed reconnect: our prefix, at a bounded rate.
        limited = logging.StreamHandler(sys.stderr)
        limited.setFormatter(_Formatter())
        limited.addFilter(_EveryS(LIBRARY_LOG_EVERY_S))
        psycopg_log = logging.getLogger("psycopg")
        psycopg_log.handlers = [limited]
        psycopg_log.propagate = False
        psycopg_log.setLevel(logging.WARNING)


class ThreadSpawner:
    """The Runtime's spawner (``velesmem.spawner.Spawner``): the only code in a serving
    process that creates threads. It keeps every thread it started, for ``threads()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def pool(self, workers: int, name: str) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(workers, thread_name_prefix=name)

    def threads(self) -> list[threading.Thread]:
        """The threads it started that still run."""
        with self._lock:
            return [t for t in self._threads if t.is_alive()]


class Runtime:
    """See the module docstring."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder,
                 clock: Callable[[], float], roots: IngestRoots, *,
                 read_only: bool = False) -> None:
        from velesmem.consolidate import ConsolidationService
        from velesmem.context.service import ContextService
        from velesmem.context.store import MemoryContextStore
        from velesmem.extract import AUTOGRAPH_EXTRACTOR, autograph_mode
        from velesmem.extract import load as load_extractor
        from velesmem.extract.autograph import Autograph
        from velesmem.extract.jobs import ExtractionService
        from velesmem.memory.curate import Curator
        from velesmem.memory.service import MemoryHooks, MemoryService
        from velesmem.migration import MigrationService
        from velesmem.store import CurationStore, WarmProgress

        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.state = State.STARTING
        self.read_only = read_only  # open_view(): a view that only looks
        self.progress: WarmProgress = WarmProgress()
        self.error: VelesmemError | None = None  # why warming has not finished, if it failed
        self._ready = threading.Event()
        self._embedder_ready = threading.Event()  # loaded, and the serving space settled
        self._backlog_wake = threading.Event()  # a fact was stored without a vector
        self._served = threading.Event()  # a first tool call ran (see WARM_GRACE_S)
        self._defer_warm = False
        self._stop = threading.Event()
        self._sweep_wake = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._close_lock = threading.Lock()
        self._state_lock = threading.Lock()  # a warm that ends after drain() leaves it DRAINING
        self.spawner = ThreadSpawner()  # every thread of the process: ours, and the store's
        self.executor = self.spawner.pool(worker_threads(), "velesmem-work")
        self.search_pool = self.spawner.pool(SEARCH_THREADS, "velesmem-search")
        mode = autograph_mode(settings)
        extractor = load_extractor(None, settings) if mode == AUTOGRAPH_EXTRACTOR else None
        self.autograph = Autograph(store, mode, clock, extractor)
        # the duplicate and supersede checks follow the acknowledgement where the store keeps
        # a curation cursor (SQLite); elsewhere they run before each write
        self.curator = (Curator(store, settings, lambda: self.embedder.model, clock)
                        if isinstance(store, CurationStore) and not read_only else None)
        hooks = MemoryHooks(on_remembered=self.autograph.offer, curation=self.curator,
                            on_unembedded=self._backlog_wake.set,
                            extraction_status=self._extraction_status,
                            embedder_ready=self._embedder_ready.is_set,
                            vectors_loading=self.vectors_loading, close=self.close)
        self.memory: MemoryService = MemoryService(store, embedder, clock, settings,
                                                   self.search_pool, hooks)
        self.context: ContextService = ContextService(MemoryContextStore(self.memory), roots,
                                                      self.memory)
        self.extraction = ExtractionService(store, embedder, settings, clock, self.memory.today)
        self._paused = threading.Event()  # set while a migration's cutover holds requests
        self._inflight = 0
        self._inflight_cv = threading.Condition()
        self._follow_lock = threading.Lock()
        self.migration = MigrationService(store, settings, clock, lambda: self.embedder,
                                          self.swap_embedder, self.pause_requests)
        self.consolidation = ConsolidationService(store, clock)
        self.recent_errors = RecentErrors()  # the Status page's tail of the log, once started

    # --- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings, *, embedder: Embedder | None = None,
             clock: Callable[[], float] | None = None, start: bool = True) -> Runtime:
        """Open and lock the store, build the services; ``start`` them. (Entry points that
        serve call ``configure_logging()`` first; a library caller keeps its own logging.)"""
        from velesmem.context.ingest import IngestRoots
        from velesmem.store import open_store

        roots = IngestRoots.from_settings(settings.ingest_roots)  # a bad root refuses to start
        clock = clock if clock is not None else time.time
        store = open_store(settings, None, float(clock()))
        try:
            if embedder is None:
                embedder = choose_embedder(settings, store)
            if _identity_known(embedder):  # a remote one is probed, and settled, while warming
                _settle(store, embedder, float(clock()))
            runtime = cls(settings, store, embedder, clock, roots)
        except BaseException:
            store.close()
            raise
        if start:
            runtime.start()
        return runtime

    @classmethod
    def open_view(cls, settings: Settings, *,
                  clock: Callable[[], float] | None = None) -> Runtime:
        """A read-only view for commands that only look (``status`` with no daemon): a SQLite
        store is read through a snapshot connection, without its lock; the embedder is
        constructed, never loaded. It starts no thread, sweeps no TTL and writes nothing
        (``start()`` refuses; a write raises). Close it like a Runtime."""
        from velesmem.context.ingest import IngestRoots
        from velesmem.store import open_store

        clock = clock if clock is not None else time.time
        if settings.backend == "sqlite":
            from velesmem.store.sqlite.backend import DB_FILE, SqliteStore
            from velesmem.store.sqlite.lock import held

            wal = settings.path / f"{DB_FILE}-wal"  # a crash's WAL must be read, not skipped
            untouched = not held(settings.path) and not (wal.exists() and wal.stat().st_size)
            store: Store = SqliteStore.open_snapshot(settings.path, untouched=untouched)
        else:  # PostgreSQL has no process lock: the store itself, never started
            store = open_store(settings, None, float(clock()))
        try:
            return cls(settings, store, choose_embedder(settings, store), clock, IngestRoots(),
                       read_only=True)
        except BaseException:
            store.close()
            raise

    def start(self, *, defer_warm: bool = False) -> None:
        """Start the store's writer, the warmer and the sweeper (idempotent). ``defer_warm`` (a
        serving process): an embedder that loads slowly starts loading once the first tool call
        has run, or after WARM_GRACE_S without one (see WARM_GRACE_S)."""
        if self.read_only:
            raise Internal("a read-only view of the store starts no worker: open the store "
                           "with velesmem.open() to serve it")
        if self.state is not State.STARTING:
            return
        self.store.start(self.spawner)
        self.recent_errors.attach()
        # only a model loaded in this process competes with the first call (a remote one's probe
        # costs nothing here)
        self._defer_warm = defer_warm and bool(getattr(self.embedder, "loads_in_process", False))
        self.state = State.WARMING
        self._spawn(WARM_THREAD, self._warm)
        self._spawn("velesmem-sweep", self._sweep_loop)
        self._spawn("velesmem-extract", self._extract_loop)
        self._spawn("velesmem-migrate", self._migrate_loop)
        if self.settings.consolidate_every:
            self._spawn("velesmem-consolidate", self._consolidate_loop)
        if self.autograph.active:
            self._spawn("velesmem-autograph", self._autograph_loop)
        if self.curator is not None:
            self._spawn("velesmem-curate", self._curate_loop)
        if isinstance(self.store, SharedStore) and os.environ.get(FOLLOW_ENV) != "off":
            self._spawn("velesmem-follow", self._follow_loop)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        """Start one of the Runtime's own workers (close() stops and joins them)."""
        self._threads.append(self.spawner.thread(name, target))

    def _warm(self) -> None:
        attempt = 0
        if self._defer_warm:
            self.progress.phase = "waiting for the first call before loading the embedding model"
            self._served.wait(WARM_GRACE_S)  # close() sets it too
        while not self._stop.is_set():
            try:
                warm = getattr(self.embedder, "warm", None)
                if callable(warm):
                    self.progress.phase = "loading the embedding model"
                    warm()
                _settle(self.store, self.embedder, float(self.clock()))
                self._embedder_ready.set()  # writes embed their fact from now on
                self.store.warm(self.progress, self._stop.is_set)
                self.migration.recover_at_start()
                if self._stop.is_set():
                    return
                self._sweep_once()
                self.error = None
                with self._state_lock:
                    if self.state is State.WARMING:
                        self.state = State.READY
                self._ready.set()
                log.info("ready: %s", self.store.location)
                break
            except VelesmemError as exc:
                if self._stop.is_set():  # closing: the store went away under the warm-up
                    return
                self.error = exc
                delay = WARM_RETRY_S[min(attempt, len(WARM_RETRY_S) - 1)]
                attempt += 1
                log.error("warming failed (retrying in %.0f s): %s", delay, exc.message)
                if self._stop.wait(delay):
                    return
            except Exception as exc:  # a bug: report it, keep serving what needs no vectors
                if self._stop.is_set():
                    return
                self.error = Internal(f"warming failed: {type(exc).__name__}: {exc}")
                log.exception("warming failed")
                return
        self._backlog_loop()

    def _backlog_loop(self) -> None:
        """Once ready: embed the facts stored without a vector (while the model loaded), and
        again whenever a write lands without one (one that raced the end of warming)."""
        attempt = 0
        while not self._stop.is_set():
            self._backlog_wake.clear()
            try:
                done = self.memory.embed_backlog(self._stop.is_set)
                attempt = 0
                if done:
                    log.info("embedded %d facts stored while the embedding model loaded", done)
            except Exception as exc:  # noqa: BLE001 — a failing embedder: keep the facts, retry
                if self._stop.is_set():
                    return
                delay = WARM_RETRY_S[min(attempt, len(WARM_RETRY_S) - 1)]
                attempt += 1
                message = exc.message if isinstance(exc, VelesmemError) else repr(exc)
                log.error("embedding the facts stored while the model loaded failed (retrying "
                          "in %.0f s): %s", delay, message)
                if self._stop.wait(delay):
                    return
                continue
            self._backlog_wake.wait()

    @property
    def embedder_ready(self) -> bool:
        """Whether the embedder has loaded and settled the serving space (writes embed now)."""
        return self._embedder_ready.is_set()

    def vectors_loading(self) -> str | None:
        """Why recall ranks by text alone right now (vector search still loading), or None."""
        if self._ready.is_set():
            return None
        p = self.progress
        done = f", {p.done:,} of {p.total:,}" if p.total else ""
        cause = f"; last attempt failed: {self.error.message}" if self.error is not None else ""
        return (f"vector search is still loading ({p.phase}{done}{cause}): these results "
                "come from text search alone; recall switches to hybrid by itself once it is "
                "ready")

    def wait_ready_sync(self, timeout: float | None = None) -> None:
        """Block until ready (the library's ``velesmem.open``); raise what stopped it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.error is not None and not isinstance(self.error, Warming):
                err = self.error
                self.close()
                raise err
            if deadline is not None and time.monotonic() > deadline:
                raise self._warming_error()
            if self._closed:
                raise Internal("velesdb-memory closed while warming")

    async def ready(self) -> None:
        """Wait for ``ready`` (only the migration tools do: they need the serving embedder
        itself). It waits as long as warming makes progress; once warming has failed for
        WARMING_WAIT_S, the call is told why (the cause, not "retry later")."""
        if self._ready.is_set():
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WARMING_WAIT_S
        while not self._ready.is_set():
            if self.state in (State.DRAINING, State.CLOSED):
                raise Internal("velesdb-memory is shutting down: the call was not run")
            if self.error is not None and loop.time() >= deadline:
                raise Internal(f"this call needs the serving embedder, which could not load: "
                               f"{self.error.message}; velesdb-memory keeps retrying by itself "
                               "— fix the cause, then call again")
            await asyncio.sleep(0.05)

    def _warming_error(self) -> VelesmemError:
        if self.error is not None:
            return Warming(f"velesdb-memory has not finished warming: {self.error.message}; it retries "
                           "by itself — fix the cause, then call again")
        p = self.progress
        done = f" ({p.done:,} of {p.total:,})" if p.total else ""
        return Warming(f"velesdb-memory has not finished warming: {p.phase}{done}; retry in a few "
                       "seconds")

    def health(self) -> dict[str, Any]:
        """``/health``'s body: status, lifecycle state, store, version (and warming progress)."""
        from velesmem import __version__

        body: dict[str, Any] = {
            "status": "ok" if self.state in (State.WARMING, State.READY) else self.state.value,
            "state": self.state.value, "store": self.store.location, "version": __version__}
        if isinstance(self.store, SharedStore):
            reason = self.store.down_reason
            body["database"] = {"reachable": reason is None}
            if reason is not None:
                body["database"]["error"] = reason
                body["status"] = "unavailable"
        if self.state is State.WARMING:
            body["warming"] = {"phase": self.progress.phase, "done": self.progress.done,
                               "total": self.progress.total}
            if self.error is not None:
                body["error"] = self.error.message
        return body

    def drain(self) -> None:
        """Refuse new work from now on (the daemon finishes in-flight calls, then closes)."""
        with self._state_lock:
            if self.state is not State.CLOSED:
                self.state = State.DRAINING

    def close(self) -> None:
        """Stop every worker, finish pending writes, close the store (idempotent)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        with self._state_lock:
            self.state = State.DRAINING
        self._stop.set()
        self._served.set()
        self.autograph.stop()
        if self.curator is not None:
            self.curator.stop()
        self.extraction.wake.set()
        self.migration.wake.set()
        self._backlog_wake.set()
        self._paused.clear()
        with self._sweep_wake:
            self._sweep_wake.notify_all()
        for thread in self._threads:
            if thread is threading.current_thread():
                continue
            if thread.name == WARM_THREAD:  # maybe inside a model load: a daemon thread
                thread.join(WARM_JOIN_S)
                if thread.is_alive():
                    log.info("stopping while the embedding model still loads (not waiting for "
                             "it); facts stored meanwhile are embedded at the next start")
            else:
                thread.join()
        self.executor.shutdown(wait=True)
        self.search_pool.shutdown(wait=True)
        self.store.close()
        self.recent_errors.detach()
        self.state = State.CLOSED

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- work off the event loop -------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run CPU-heavy ``fn`` on the bounded worker pool and await it."""
        await self._admit()
        try:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))
            except SpaceMoved:  # another daemon's migration: follow it, run the call again
                await loop.run_in_executor(self.executor, self.follow_serving)
                return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))
        finally:
            self._leave()

    async def write(self, submit: Callable[..., Future[T]], *args: Any, offload: bool = False,
                    **kwargs: Any) -> T:
        """Prepare a write (validate; embed), on the worker pool if ``offload`` says that is
        heavy, else here; then await its commit on the event loop: no thread waits for the
        store's writer."""
        await self._admit()
        loop = asyncio.get_running_loop()
        try:
            try:
                if offload:
                    future = await loop.run_in_executor(self.executor,
                                                        lambda: submit(*args, **kwargs))
                else:  # microseconds: cheaper than the two thread hops
                    future = submit(*args, **kwargs)
                return await asyncio.wrap_future(future)
            except SpaceMoved:  # nothing was written: follow the new space, prepare it again
                await loop.run_in_executor(self.executor, self.follow_serving)
                future = await loop.run_in_executor(self.executor,
                                                    lambda: submit(*args, **kwargs))
                return await asyncio.wrap_future(future)
        finally:
            self._leave()

    async def _admit(self) -> None:
        # A cutover holds requests for at most its budget; _paused is a threading.Event (set by
        # the migration's thread), so the loop polls it rather than awaiting an asyncio.Event.
        while self._paused.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.002)
        with self._inflight_cv:
            self._inflight += 1

    def _leave(self) -> None:
        with self._inflight_cv:
            self._inflight -= 1
            self._inflight_cv.notify_all()
        if not self._served.is_set():
            self._served.set()  # a deferred warm-up may begin

    @contextmanager
    def pause_requests(self, wait_s: float) -> Iterator[float]:
        """Hold new tool calls and wait (at most ``wait_s``) for those in flight to finish;
        yield the milliseconds that wait took. Used by a migration's cutover."""
        started = time.perf_counter()
        self._paused.set()
        try:
            with self._inflight_cv:
                self._inflight_cv.wait_for(lambda: self._inflight == 0, timeout=wait_s)
            yield (time.perf_counter() - started) * 1000
        finally:
            self._paused.clear()

    def swap_embedder(self, embedder: Embedder) -> None:
        """Serve with ``embedder`` from now on (a migration's cutover, requests held)."""
        self.embedder = embedder
        self.memory.set_embedder(embedder)
        self.extraction.set_embedder(embedder)

    # --- many daemons, one database: follow the serving space another daemon moved --------
    def _shared(self) -> SharedStore:
        """The store as many daemons share it (only a shared store moves or is followed)."""
        if not isinstance(self.store, SharedStore):
            raise Internal(f"store {self.store.location} is not shared: nothing to follow")
        return self.store

    def _follow_loop(self) -> None:
        try:
            self._shared().watch(self._stop, self._serving_seen)
        except Exception:  # a bug: calls still follow a move by their retry
            log.exception("following the database failed")

    def _serving_seen(self, space_id: int) -> None:
        """The watcher saw ``space_id`` serving: follow it unless this daemon serves it, is
        still warming (it settles then) or is the one migrating."""
        current = self.store.serving_space()
        if (current is not None and current.id == space_id) or not self._ready.is_set() \
                or self.migration.running:
            return
        try:
            self.follow_serving(pause=True)
        except VelesmemError as exc:
            log.error("could not follow the new embedding space: %s", exc.message)
        except Exception:
            log.exception("could not follow the new embedding space")

    def follow_serving(self, pause: bool = False) -> bool:
        """Serve the space the database records if another daemon's migration moved it, with
        the embedder that fills it (loaded here); True if it moved. ``pause`` holds new calls
        during the swap (not from inside a call: it would wait for itself)."""
        with self._follow_lock:
            space = self._shared().recorded_serving()
            if space is None:
                return False
            embedder = self.embedder
            if (embedder.model, embedder.dimension) != (space.identity.model,
                                                        space.identity.dimension):
                embedder = _embedder_for(self.settings, space.identity)
            with self.pause_requests(FOLLOW_PAUSE_S) if pause else _nothing():
                if embedder is not self.embedder:
                    self.swap_embedder(embedder)  # first: a vector made before goes nowhere
                self._shared().follow(space)
            log.info("another daemon moved the store to embedding space %d (%s, %d dims): "
                     "serving it", space.id, space.identity.model, space.identity.dimension)
            return True

    def _migrate_loop(self) -> None:
        while not self._ready.wait(0.1):
            if self._stop.is_set():
                return
        self.migration.run(self._stop)

    # --- extraction and autograph ------------------------------------------------------------
    def _extraction_status(self) -> dict[str, Any]:
        return {"configured": self.settings.extractor is not None,
                "autograph_active": self.autograph.active and self.state is not State.CLOSED,
                "autograph_dropped": self.autograph.dropped}

    def _extract_loop(self) -> None:
        """Run extraction jobs once ready: those recovered from before a restart, then each one
        accepted (woken at once, or every second)."""
        while not self._ready.wait(0.1):
            if self._stop.is_set():
                return
        while not self._stop.is_set():
            self.extraction.wake.clear()
            if isinstance(self.store, SharedStore) and self.store.down_reason is not None:
                self.extraction.wake.wait(1.0)  # the database is away: nothing to claim
                continue
            try:
                self.extraction.run_pending(self._stop)
            except VelesmemError as exc:
                if not self._stop.is_set():
                    log.error("the extraction worker failed: %s", exc.message)
            except Exception:
                log.exception("the extraction worker failed")
            self.extraction.wake.wait(1.0)

    def _curate_loop(self) -> None:
        while not self._ready.wait(0.1):
            if self._stop.is_set():
                return
        if self.curator is not None:
            self.curator.run(self._stop)

    def _autograph_loop(self) -> None:
        while not self._ready.wait(0.1):
            if self._stop.is_set():
                return
        self.autograph.run(self._stop)

    # --- scheduled consolidation -------------------------------------------------------------
    def _consolidate_loop(self) -> None:
        """Apply a consolidation run every ``consolidate_every`` seconds once ready (each run
        journaled and undoable like the command's)."""
        every = float(self.settings.consolidate_every or 0)
        while not self._stop.wait(every):
            if not self._ready.is_set():
                continue
            try:
                report = self.consolidation.apply(self.settings.archive_after_days,
                                                  self.settings.decay_after_days)
                if report.changes or report.decays:
                    log.info("consolidation run %s archived %d facts, decayed %d", report.run,
                             len(report.changes), len(report.decays))
            except VelesmemError as exc:
                log.error("the scheduled consolidation failed: %s", exc.message)
            except Exception:
                log.exception("the scheduled consolidation failed")

    # --- the TTL sweeper ---------------------------------------------------------------------
    def _sweep_once(self) -> None:
        nxt = self.store.next_expiry()
        if nxt is not None and self.clock() >= nxt:
            purged = self.memory.purge_expired()
            if purged:
                log.info("purged %d expired facts", purged)

    def _sweep_loop(self) -> None:
        self.store.expiry_listener = self._expiry_changed
        while not self._stop.is_set():
            if self._ready.is_set():
                try:
                    self._sweep_once()
                except VelesmemError as exc:
                    log.error("the TTL sweep failed: %s", exc.message)
                except Exception:
                    log.exception("the TTL sweep failed")
            nxt = self.store.next_expiry()
            wait = SWEEP_MAX_SLEEP_S if nxt is None else max(0.0, nxt - self.clock())
            with self._sweep_wake:
                if not self._stop.is_set():
                    self._sweep_wake.wait(min(wait, SWEEP_MAX_SLEEP_S) + 0.01)

    def _expiry_changed(self, _expires_at: float) -> None:
        with self._sweep_wake:
            self._sweep_wake.notify_all()


@contextmanager
def offline_store(settings: Settings, *, now: float | None = None,
                  writable: bool = False) -> Iterator[Store]:
    """The store for maintenance commands (export, verify), without an embedder: opened and
    locked when nothing serves it; while a daemon holds a SQLite store, a read-only snapshot
    of it (``writable`` refuses that instead: repairs need the lock)."""
    from velesmem.errors import StoreLocked
    from velesmem.store import open_store

    now = time.time() if now is None else now
    try:
        store = open_store(settings, None, now)
    except StoreLocked:
        if writable or settings.backend != "sqlite":
            raise
        from velesmem.store.sqlite.backend import SqliteStore

        store = SqliteStore.open_snapshot(settings.path)
    try:
        yield store
    finally:
        store.close()


def _identity_known(embedder: Embedder) -> bool:
    """Whether the embedder's dimension is known without a network probe (hash, local)."""
    return getattr(embedder, "backend", None) not in ("ollama", "openai")


def _settle(store: Store, embedder: Embedder, now: float) -> None:
    from velesmem.store import Identity

    store.settle(Identity(embedder.model, embedder.dimension), now)


def backend_of(model: str) -> str | None:
    """The embedder backend that records ``model`` as its provenance (None: unknown)."""
    from velesmem.embed import HASH_MODEL

    if model == HASH_MODEL:
        return "hash"
    prefix, sep, _ = model.partition(":")
    return prefix if sep and prefix in ("local", "ollama", "openai") else None


def choose_embedder(settings: Settings, store: Store) -> Embedder:
    """The embedder that serves ``store``.

    VELESDB_MEMORY_EMBEDDER unset: the one that filled the store (its provenance); for a new
    store, ``local`` when the ``embed`` extra is installed, else ``hash``. Set: that one — and
    one that does not match the store is refused with the migration command, except the
    embedder a committed migration moved the store away from, which gives way (with a warning)
    to the one it moved to.
    """
    from velesmem.embed import load_embedder, local_available
    from velesmem.errors import EmbedderMismatch

    recorded = store.provenance()
    chosen = settings.embedder
    if chosen is None:
        if recorded is not None:
            chosen = backend_of(recorded.model)
            if chosen is None:
                raise EmbedderMismatch(
                    f"store {store.location} was filled by embedder {recorded.model!r}, which "
                    "this velesmem does not know: set VELESDB_MEMORY_EMBEDDER to it")
            settings = _recorded_model(settings, chosen, recorded.model)
        else:
            chosen = "local" if local_available() else "hash"
        return load_embedder(settings.with_overrides(embedder=chosen))
    embedder = load_embedder(settings)
    if recorded is None or not _identity_known(embedder):
        return embedder
    if (embedder.model, embedder.dimension) == (recorded.model, recorded.dimension):
        return embedder
    if chosen == "local" and backend_of(recorded.model) == "local":
        # an older graph of the local model filled the store: that graph keeps serving it
        return load_embedder(_recorded_model(settings, "local", recorded.model))
    moved_to = backend_of(recorded.model)
    if store.migrated_from() == embedder.model and moved_to is not None:
        log.warning("VELESDB_MEMORY_EMBEDDER=%s, but this store was migrated from it to %s: "
                    "serving with %s (update the setting, or unset it)", chosen,
                    recorded.model, moved_to)
        settings = _recorded_model(settings, moved_to, recorded.model)
        return load_embedder(settings.with_overrides(embedder=moved_to))
    raise EmbedderMismatch(
        f"store {store.location} was filled by embedder {recorded.model!r} "
        f"({recorded.dimension} dims) but VELESDB_MEMORY_EMBEDDER={chosen} is "
        f"{embedder.model!r} ({embedder.dimension} dims): unset VELESDB_MEMORY_EMBEDDER (the "
        f"store's own embedder then serves it), or move the store to {chosen} with "
        f"`velesdb-memory migrate --to {chosen}` (export it first with `velesdb-memory export "
        f"--output memories.jsonl`)")


def embedder_of(settings: Settings, identity: Identity) -> Embedder | None:
    """The embedder that produced the vectors of a space with ``identity`` (its recorded model),
    whatever VELESDB_MEMORY_EMBEDDER says; the settings give the rest (server URLs, keys). None
    when this velesmem does not know that model. Constructed, not warmed."""
    from velesmem.embed import load_embedder

    backend = backend_of(identity.model)
    if backend is None:
        return None
    return load_embedder(_recorded_model(settings, backend, identity.model)
                         .with_overrides(embedder=backend))


@contextmanager
def _nothing() -> Iterator[float]:
    yield 0.0


def _embedder_for(settings: Settings, identity: Identity) -> Embedder:
    """The embedder whose model and dimension ``identity`` records, loaded and warmed."""
    from velesmem.errors import EmbedderMismatch

    embedder = embedder_of(settings, identity)
    if embedder is None:
        raise EmbedderMismatch(f"another daemon moved the store to embedder {identity.model!r}, "
                               "which this velesmem does not know: upgrade it")
    warm = getattr(embedder, "warm", None)
    if callable(warm):
        warm()
    if (embedder.model, embedder.dimension) != (identity.model, identity.dimension):
        raise EmbedderMismatch(f"another daemon moved the store to {identity.model} "
                               f"({identity.dimension} dims), but this daemon's embedder is "
                               f"{embedder.model} ({embedder.dimension} dims): configure the "
                               "same one")
    return embedder


def _recorded_model(settings: Settings, backend: str, model: str) -> Settings:
    """Settings naming the model a provenance records (``ollama:all-minilm``, a local graph)."""
    if backend == "local":
        return settings.with_overrides(local_model=model)
    name = model.partition(":")[2]
    if backend == "ollama":
        return settings.with_overrides(ollama_model=name)
    if backend == "openai":
        return settings.with_overrides(openai_model=name)
    return settings

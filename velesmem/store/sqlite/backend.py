"""The SQLite backend: one locked directory holding SQLite (the truth) and derived FAISS indexes.

Opening (fast, before the daemon serves): create the directory owner-only, take the directory
lock, open SQLite in WAL mode (its files owner-only too), apply pending migrations and settle the
serving embedding space against the embedder. Warming (slow, in the background): load the
serving space's FAISS index and replay what changed since it was saved, or rebuild it.
``synchronous=NORMAL`` in WAL mode keeps every committed transaction across a process crash
(kill -9); only an OS crash or power loss may drop the last commits.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from velesmem import limits
from velesmem.errors import EmbedderMismatch, Internal, InvalidInput
from velesmem.spawner import Spawner
from velesmem.store.rows import scalar
from velesmem.store.sqlite import backlog, curation, spaces, writes
from velesmem.store.sqlite.exact import StoredVectors
from velesmem.store.sqlite.jobs import JobPart
from velesmem.store.sqlite.lock import StoreLock
from velesmem.store.sqlite.migration import MigrationPart
from velesmem.store.sqlite.part import journal_bytes
from velesmem.store.sqlite.reads import ReadPart
from velesmem.store.sqlite.schema import SCHEMA_VERSION, current_version, migrate
from velesmem.store.sqlite.search import SearchPart
from velesmem.store.sqlite.text import TextIndex
from velesmem.store.sqlite.vector_index import VectorIndex, index_files
from velesmem.store.sqlite.writer import Outcome, Writer
from velesmem.store.types import (
    JOURNAL_ENTRY_BYTES,
    FactWrite,
    GraphWrite,
    Identity,
    Problem,
    RestoreWrite,
    Space,
    TokenRecord,
    Uncurated,
    WarmProgress,
)

if TYPE_CHECKING:
    from velesmem.store.sqlite.tokens import SqliteTokens

DB_FILE = "memory.sqlite3"
BUSY_TIMEOUT_MS = 10_000
DIR_MODE = 0o700
FILE_MODE = 0o600
log = logging.getLogger(__name__)
T = TypeVar("T")


def connect(path: Path, *, readonly: bool = False,
            cache_kib: int | None = None) -> sqlite3.Connection:
    """A connection in autocommit mode (explicit BEGIN) with the store's pragmas (its page
    cache ``cache_kib``, else the reader's or the writer's).

    ``readonly`` connections of a store this process has open keep scratch tables in ``temp``
    (recall's query-term statistics), so they are not opened with ``mode=ro``."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA mmap_size={limits.SQLITE_MMAP_BYTES}")
    if cache_kib is None:
        cache_kib = (limits.SQLITE_READER_CACHE_KIB if readonly
                     else limits.SQLITE_WRITER_CACHE_KIB)
    conn.execute(f"PRAGMA cache_size=-{cache_kib}")
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def private_directory(directory: Path) -> None:
    """Create ``directory`` owner-only, and tighten it and every file in it if it exists."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    except OSError as exc:
        raise Internal(f"cannot create the store directory {directory}: {exc.strerror}. "
                       "Point VELESDB_MEMORY_PATH at a directory you can write") from None
    if os.name != "posix":
        return
    try:
        os.chmod(directory, DIR_MODE)
        for entry in os.scandir(directory):
            if entry.is_file(follow_symlinks=False):
                os.chmod(entry.path, FILE_MODE)
    except OSError as exc:
        log.warning("could not make the store %s private: %s", directory, exc)


def damaged(directory: Path, exc: sqlite3.Error) -> Internal:
    """The worded error for a store SQLite cannot read or write."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return Internal(
            f"store {directory} is read-only ({text}): nothing was changed. Give the user "
            "running velesmem write access to the directory and its files, or point "
            "VELESDB_MEMORY_PATH at a writable directory")
    return Internal(
        f"store {directory} is damaged: SQLite says {text!r}. Nothing was changed. Run "
        f"`velesdb-memory verify --path {directory}` to see what is wrong; to recover, move the "
        "directory aside and restore from an export (`velesdb-memory import memories.jsonl`)")


class SqliteStore(ReadPart, SearchPart, MigrationPart, JobPart):
    """An open store directory (see the module docstring). Implements ``Store``: opening,
    warming, closing, the serving space, writes and integrity here; reads, search, the
    migration's second space and jobs in its parts (``velesmem.store.sqlite.part``)."""

    backend = "sqlite"

    def __init__(self, directory: Path, lock: StoreLock | None, conn: sqlite3.Connection,
                 serving: Space | None, *, readonly: bool = False) -> None:
        self.directory = directory
        self.location = str(directory.resolve())
        self.db_path = directory / DB_FILE
        self.serving = serving
        self.readonly = readonly
        self._snapshot_uri = f"file:{self.db_path}?mode=ro"  # open_snapshot() may say immutable
        self._spawner: Spawner | None = None  # the Runtime's, from start()
        self.index: VectorIndex | None = None
        self._lock = lock
        self._write_conn = conn
        self._readers: list[sqlite3.Connection] = []
        self._local = threading.local()
        self._readers_lock = threading.Lock()
        self.seq = spaces.seq_high(conn)
        self._persisted_seq = self.seq
        self.writer = Writer(conn, before_commit=self._persist_seq)
        self.text = TextIndex(lambda: self.seq, lambda: self.text_generation)
        # Earliest expiry that may be pending (writer thread keeps it current).
        self._next_expiry: float | None = scalar(conn.execute(
            "SELECT min(expires_at) FROM facts WHERE expires_at IS NOT NULL"))
        self.expiry_listener: Callable[[float], None] | None = None
        self.provenance_recorded = _read_provenance(conn) is not None
        # Bumped (writer thread) when a fact's text changes under its id (a hash collision):
        # caches keyed by fact id that derive from the text (FTS row lengths) start over.
        self.text_generation = 0
        self.warm_done = False
        self._closed = False
        row = conn.execute("SELECT value FROM meta WHERE key = 'journal_epoch'").fetchone()
        self._journal_epoch: str | None = None if row is None else row[0]
        row = conn.execute("SELECT value FROM meta WHERE key = 'journal_max_bytes'").fetchone()
        self._journal_max = int(row[0]) if row else 0
        self._journal_bytes = journal_bytes(conn) if self._journal_epoch else 0
        self.building_index: VectorIndex | None = None
        self._vector_sources: dict[int, StoredVectors] = {}
        self._token_table: SqliteTokens | None = None  # opened at first use

    # --- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, identity: Identity | None, now: float) -> SqliteStore:
        """Lock and open ``directory``; with ``identity`` settle the serving space (a store
        filled by another embedder is refused). Without it (export, verify) no space is
        needed."""
        directory = Path(directory).expanduser()
        private_directory(directory)
        lock = StoreLock(directory)
        lock.acquire()
        if lock.stale_pid is not None:
            log.info("store %s: the previous holder (pid %d) is gone; taking over", directory,
                     lock.stale_pid)
        conn: sqlite3.Connection | None = None
        serving: Space | None
        try:
            try:
                conn = connect(directory / DB_FILE)
                _private_file(directory / DB_FILE)
                migrate(conn, now)
                if identity is not None:
                    serving = _settle_space(conn, identity, directory, now)
                else:  # maintenance: the space as recorded, settled by no embedder
                    sid = spaces.serving_space_id(conn)
                    serving = None if sid is None else spaces.read_space(conn, sid)
            except sqlite3.DatabaseError as exc:
                raise damaged(directory, exc) from None
            return cls(directory, lock, conn, serving)
        except BaseException:
            if conn is not None:
                conn.close()
            lock.release()
            raise

    @classmethod
    def open_snapshot(cls, directory: Path, *, untouched: bool = False) -> SqliteStore:
        """A read-only view of a store another process may be serving: no lock, no writes;
        each read sees a consistent snapshot (WAL). ``untouched``: no process serves the store
        and its WAL is empty, so it is read as an immutable file, which creates no ``-wal`` or
        ``-shm`` beside it (a read-only WAL reader would)."""
        directory = Path(directory).expanduser()
        path = directory / DB_FILE
        if not path.is_file():
            raise Internal(f"no store at {directory} (no {DB_FILE} there)")
        uri = f"file:{path}?mode=ro" + ("&immutable=1" if untouched else "")
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                   check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            version = current_version_readonly(conn)
        except sqlite3.DatabaseError as exc:
            raise damaged(directory, exc) from None
        if version != SCHEMA_VERSION:
            conn.close()
            raise Internal(f"store {directory} has schema version {version}, this velesmem reads "
                           f"{SCHEMA_VERSION}: open it once with the daemon (which migrates it)")
        sid = spaces.serving_space_id(conn)
        serving = None if sid is None else spaces.read_space(conn, sid)
        store = cls(directory, None, conn, serving, readonly=True)
        store._snapshot_uri = uri
        return store

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, spawner: Spawner) -> None:
        """Start the writer thread on ``spawner`` (writes queue until then); the indexer
        starts on it too once warm."""
        if self.readonly:
            return
        self._spawner = spawner
        self.writer.start(spawner)

    def warm(self, progress: WarmProgress, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Load the serving space's FAISS index (replay or rebuild), then catch up, inside the
        writer, with anything committed meanwhile, and start the indexer."""
        if self.serving is None:
            self.warm_done = True
            return
        space = self.serving
        index = spaces.load_index(self.reader(), self.directory, space, progress, cancelled,
                                  source=self.vector_source(space))
        if cancelled():
            return

        def install(conn: sqlite3.Connection) -> Outcome[None]:
            spaces.catch_up(conn, index, space)
            self.index = index
            return Outcome(None)

        if self.writer.running:
            self.writer.submit(install).result()
        else:
            install(self._write_conn)
        if self._spawner is not None:  # never started: vectors are indexed synchronously
            index.keep_exact_rows(self.directory)
            index.start_indexer(self._spawner)
            index.wait_filled(cancelled)  # vector search reads the file from its first query
        progress.phase = "ready"
        self.warm_done = True

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection (WAL readers never block the writer)."""
        if self._closed:
            raise Internal("the store is closed")
        if self.readonly:
            return self._write_conn
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.db_path, readonly=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def vector_source(self, space: Space) -> StoredVectors:
        """The exact stored vectors of ``space`` (its index's rescoring reads them)."""
        with self._readers_lock:
            source = self._vector_sources.get(space.id)
            if source is None:
                source = StoredVectors(self._vector_connection, space.id,
                                       space.identity.dimension)
                self._vector_sources[space.id] = source
            return source

    def _vector_connection(self) -> sqlite3.Connection:
        if self.readonly:  # a snapshot of a store another process serves
            conn = sqlite3.connect(self._snapshot_uri, uri=True, isolation_level=None,
                                   check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA cache_size=-{limits.SQLITE_VECTOR_READER_CACHE_KIB}")
            return conn
        return connect(self.db_path, readonly=True,
                       cache_kib=limits.SQLITE_VECTOR_READER_CACHE_KIB)

    def save_index(self) -> None:
        if self.index is None or self.serving is None:
            return
        if not self.writer.running:  # closed: every committed write has reached the index
            self.index.watermark = max(self.index.watermark, self.seq)
        try:
            self.index.save(self.directory, self.serving.identity.model, self.serving.id)
        except (OSError, RuntimeError) as exc:  # a cache: the next open rebuilds it
            log.warning("could not save the FAISS index: %s", exc)
            return
        try:
            spaces.prune_deletes(self._write_conn, self.index, self.serving)
        except sqlite3.Error as exc:
            log.warning("could not prune the vector delete log: %s", exc)

    def close(self) -> None:
        """Drain the writer, save the index, close every connection, release the lock."""
        if self._closed:
            return
        if not self.readonly:
            self.writer.close()
        self._closed = True
        if not self.readonly:
            self.save_index()
        if self.index is not None:
            self.index.drop_exact_rows()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            sources, self._vector_sources = list(self._vector_sources.values()), {}
        for source in sources:
            source.close()
        if self._token_table is not None:
            self._token_table.close()
        if not self.readonly:
            try:
                self._write_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
        self._write_conn.close()
        if self._lock is not None:
            self._lock.release()

    # --- bearer tokens: their own connection (velesmem.store.sqlite.tokens) -------------------
    def _tokens(self) -> SqliteTokens:
        with self._readers_lock:
            if self._token_table is None:
                if self._closed:
                    raise Internal("the store is closed")
                from velesmem.store.sqlite.tokens import SqliteTokens

                self._token_table = SqliteTokens(self.db_path, self.directory)
            return self._token_table

    def put_token(self, name: str, digest: str, now: float) -> TokenRecord:
        return self._tokens().put_token(name, digest, now)

    def tokens(self) -> list[TokenRecord]:
        return self._tokens().tokens()

    def revoke_token(self, name: str, now: float) -> TokenRecord | None:
        return self._tokens().revoke_token(name, now)

    def find_token_by_hash(self, digest: str) -> TokenRecord | None:
        return self._tokens().find_token_by_hash(digest)

    # --- writer-thread helpers (used by the write jobs) --------------------------------------
    def next_seq(self) -> int:
        """The next write sequence number (writer thread only); never reused."""
        self.seq += 1
        return self.seq

    def _persist_seq(self, conn: sqlite3.Connection) -> None:
        if self.seq != self._persisted_seq:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('seq_high', ?)", (str(self.seq),))
            self._persisted_seq = self.seq

    def note_expiry(self, expires_at: float) -> None:
        """A fact expires at ``expires_at`` (writer thread only)."""
        if self._next_expiry is None or expires_at < self._next_expiry:
            self._next_expiry = expires_at
            if self.expiry_listener is not None:
                self.expiry_listener(expires_at)

    def set_next_expiry(self, value: float | None) -> None:
        self._next_expiry = value

    def next_expiry(self) -> float | None:
        return self._next_expiry

    def journal_write(self, conn: sqlite3.Connection, key: int) -> None:
        """Record that fact ``key`` (or its outgoing edges) changed, for a running migration
        (writer thread, inside the write's savepoint: refused writes journal nothing)."""
        epoch = self._journal_epoch
        if epoch is None:
            return
        if self._journal_bytes + JOURNAL_ENTRY_BYTES > self._journal_max:
            self._journal_bytes = journal_bytes(conn)  # what was replayed meanwhile
            if self._journal_bytes + JOURNAL_ENTRY_BYTES > self._journal_max:
                raise InvalidInput(
                    f"the embedding migration's journal is full ({self._journal_bytes} of "
                    f"{self._journal_max} bytes, journal_max_bytes): this write was refused so "
                    "that nothing goes untracked. Retry in a moment (the migration replays the "
                    "journal as it goes), or cancel it with migration_cancel")
        conn.execute("INSERT INTO migration_journal (epoch, key, bytes) VALUES (?, ?, ?)",
                     (epoch, key, JOURNAL_ENTRY_BYTES))
        self._journal_bytes += JOURNAL_ENTRY_BYTES

    def _submit(self, job: Callable[[sqlite3.Connection], Outcome[T]], *,
                background: bool = False) -> Future[T]:
        if self.readonly:
            raise Internal("this store view is read-only")
        return self.writer.submit(job, background=background)

    # --- embedding spaces --------------------------------------------------------------------
    def provenance(self) -> Identity | None:
        return _read_provenance(self.reader())

    def migrated_from(self) -> str | None:
        """The model the store was served by before its last committed migration."""
        row = self.reader().execute("SELECT value FROM meta WHERE key = 'migrated_from'"
                                    ).fetchone()
        return None if row is None else str(row[0])

    def serving_space(self) -> Space | None:
        return self.serving

    def settle(self, identity: Identity, now: float) -> Space:
        if self.serving is not None and self.serving.identity == identity:
            return self.serving
        if self.writer.running:  # a remote embedder probed while the daemon already serves
            def job(conn: sqlite3.Connection) -> Outcome[Space]:
                return Outcome(_settle_space(conn, identity, self.directory, now,
                                             own_transaction=False))

            self.serving = self.writer.submit(job).result()
            return self.serving
        try:
            self.serving = _settle_space(self._write_conn, identity, self.directory, now)
        except sqlite3.DatabaseError as exc:
            raise damaged(self.directory, exc) from None
        return self.serving

    # --- writes ------------------------------------------------------------------------------
    def remember(self, w: FactWrite) -> Future[int]:
        if self.serving is None and w.vector is not None:
            raise Internal("the store was opened without an embedder")
        return self._submit(writes.remember(self, w))

    def unembedded(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        space = self.serving
        if space is None:
            return []
        return backlog.unembedded(self.reader(), space.id, after, limit, now)

    def uncurated(self, limit: int, now: float) -> list[Uncurated]:
        space = self.serving
        if space is None:
            return []
        return curation.uncurated(self.reader(), space.id, limit, now)

    def curation_backlog(self) -> int:
        space = self.serving
        return 0 if space is None else curation.backlog(self.reader(), space.id)

    def written_after(self, keys: Sequence[int], through: tuple[int, int]) -> set[int]:
        space = self.serving
        if space is None or not keys:
            return set()
        return curation.written_after(self.reader(), space.id, list(keys), through)

    def curate(self, edges: tuple[tuple[int, int, str], ...], through: tuple[int, int],
               now: float) -> Future[int]:
        return self._submit(curation.curate(self, edges, through, now), background=True)

    def fill_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        return self._submit(backlog.fill(self, space, items))

    def relate(self, src: int, dst: int, relation: str, now: float) -> Future[int]:
        return self._submit(writes.relate(self, src, dst, relation, now))

    def unrelate(self, src: int, dst: int, relation: str) -> Future[int]:
        return self._submit(writes.unrelate(self, src, dst, relation))

    def forget(self, key: int, now: float) -> Future[bool]:
        return self._submit(writes.forget(self, key, now))

    def feedback(self, key: int, success: bool, now: float) -> Future[float]:
        return self._submit(writes.feedback(self, key, success, now))

    def purge_expired(self, now: float) -> Future[int]:
        return self._submit(writes.purge_expired(self, now))

    def restore(self, key: int, confidence: float, successes: int, failures: int,
                created_at: float, updated_at: float,
                expires_at: float | None) -> Future[bool]:
        return self._submit(writes.restore(self, key, confidence, successes, failures,
                                           created_at, updated_at, expires_at))

    def restore_all(self, write: RestoreWrite) -> Future[int]:
        from velesmem.store.restore import restore_job

        space = self.serving
        return self._submit(curation.uncurated_job(restore_job(self, writes, Outcome, write),
                                                   None if space is None else space.id))

    def put_internal(self, key: int, content: str, metadata_json: str, kind: str, now: float,
                     expires_at: float | None = None) -> Future[int]:
        return self._submit(writes.put_internal(self, key, content, metadata_json, kind, now,
                                                expires_at))

    def delete_internal(self, key: int) -> Future[bool]:
        return self._submit(writes.delete_internal(self, key))

    def write_graph(self, graph: GraphWrite, *, job: str | None = None,
                    result: dict[str, Any] | None = None,
                    background: bool = False) -> Future[list[int]]:
        if graph.facts and self.serving is None:
            raise Internal("the store was opened without an embedder")
        return self._submit(writes.write_graph(self, graph, job, result), background=background)

    # --- integrity ---------------------------------------------------------------------------
    def verify(self) -> list[Problem]:
        from velesmem.store.sqlite.verify import verify

        return verify(self)

    def repair(self, report: Callable[[str], None],
               embed: Callable[[list[str]], np.ndarray] | None = None) -> list[Problem]:
        from velesmem.store.sqlite.verify import repair

        return repair(self, report, embed)


def _private_file(path: Path) -> None:
    if os.name == "posix":
        try:
            os.chmod(path, FILE_MODE)
        except OSError:
            pass


def current_version_readonly(conn: sqlite3.Connection) -> int:
    try:
        row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0] or 0)


def _read_provenance(conn: sqlite3.Connection) -> Identity | None:
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                             "('provenance_model', 'provenance_dimension')").fetchall())
    if "provenance_model" not in rows:
        return None
    return Identity(rows["provenance_model"], int(rows["provenance_dimension"]))


def _settle_space(conn: sqlite3.Connection, identity: Identity, directory: Path,
                  now: float, own_transaction: bool = True) -> Space:
    """The serving space for ``identity``: created for a new store, replaced while it holds no
    vector, refused when another embedder filled the store."""
    sid = spaces.serving_space_id(conn)
    space = None if sid is None else spaces.read_space(conn, sid)
    if space is not None and space.identity == identity:
        return space
    recorded = _read_provenance(conn)
    if (space is not None and recorded is None and not space.identity.model
            and space.identity.dimension == identity.dimension):
        # A store from before provenance was recorded: the check degrades to the dimension.
        conn.execute("UPDATE spaces SET model = ? WHERE id = ?", (identity.model, space.id))
        return Space(space.id, identity, space.witness)
    if space is not None and (recorded is not None or spaces.vector_count(conn, space.id)):
        filled = recorded or space.identity
        raise EmbedderMismatch(
            f"store {directory} was filled by embedder {filled.model!r} ({filled.dimension} "
            f"dims) but the configured embedder is {identity.model!r} ({identity.dimension} "
            f"dims): set VELESDB_MEMORY_EMBEDDER back to the embedder that filled it, or migrate "
            f"the store to the new one with `velesdb-memory migrate --to <embedder>` (export it "
            f"first with `velesdb-memory export --output memories.jsonl`)")
    if own_transaction:
        conn.execute("BEGIN IMMEDIATE")
    try:
        if space is None:
            cur = conn.execute("INSERT INTO spaces (model, dimension, state, created_at) "
                               "VALUES (?, ?, 'serving', ?)",
                               (identity.model, identity.dimension, now))
            new_id = int(cur.lastrowid or 1)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('serving_space', ?)", (str(new_id),))
        else:
            new_id = space.id
            conn.execute("UPDATE spaces SET model = ?, dimension = ?, witness = '[]' "
                         "WHERE id = ?", (identity.model, identity.dimension, new_id))
            for path in index_files(directory, new_id):
                path.unlink(missing_ok=True)
        if own_transaction:
            conn.execute("COMMIT")
    except BaseException:
        if own_transaction:
            conn.execute("ROLLBACK")
        raise
    return Space(new_id, identity)


__all__ = ["DB_FILE", "SqliteStore", "connect", "current_version"]

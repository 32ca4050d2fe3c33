"""The store directory: lock, SQLite (source of truth), FAISS (derived), the writer thread.

Opening a store: take the directory lock, open SQLite in WAL mode, apply pending migrations,
check the embedder against the recorded provenance, then load the FAISS index and reconcile it
with SQLite (replay what it lacks, tombstone what SQLite no longer has; rebuild it when the file
is missing, corrupt or from another embedder). ``synchronous=NORMAL`` in WAL mode keeps every
committed transaction across a process crash (kill -9); only an OS crash or power loss may drop
the last commits.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from velesmem.errors import EmbedderMismatch, Internal
from velesmem.store.lock import StoreLock
from velesmem.store.schema import migrate
from velesmem.store.vector_index import VectorIndex
from velesmem.store.writer import Writer

DB_FILE = "memory.sqlite3"
BUSY_TIMEOUT_MS = 10_000
MMAP_BYTES = 1 << 30  # reads through the OS page cache without a syscall per page
CACHE_KIB = 32 * 1024  # per connection
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Identity:
    """What embeds the store's facts: recorded as provenance with the first fact."""

    model: str
    dimension: int


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (explicit BEGIN) with the store's pragmas."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    if readonly:
        # Readers write nothing to the store; they may keep scratch tables in ``temp``
        # (recall's query-term statistics), so query_only is not set.
        pass
    else:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def read_provenance(conn: sqlite3.Connection) -> Identity | None:
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                             "('provenance_model', 'provenance_dimension')").fetchall())
    if "provenance_model" not in rows:
        return None
    return Identity(rows["provenance_model"], int(rows["provenance_dimension"]))


def record_provenance(conn: sqlite3.Connection, identity: Identity) -> None:
    """Record the embedder identity if none is recorded yet (inside the caller's transaction)."""
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('provenance_model', ?)", (identity.model,))
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('provenance_dimension', ?)",
                 (str(identity.dimension),))


class Store:
    """An open store directory. ``index`` is None when opened without an embedder (export)."""

    def __init__(self, directory: Path, lock: StoreLock, conn: sqlite3.Connection,
                 identity: Identity | None, index: VectorIndex | None) -> None:
        self.directory = directory
        self.db_path = directory / DB_FILE
        self.identity = identity
        self.index = index
        self._lock = lock
        self._write_conn = conn
        self._readers: list[sqlite3.Connection] = []
        self._local = threading.local()
        self._readers_lock = threading.Lock()
        self.writer = Writer(conn)
        self.seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM facts").fetchone()[0])
        # Earliest expiry that may be pending; -inf forces a purge check at the first use.
        # Only the writer thread changes it (in write effects, in commit order).
        self.next_expiry: float | None = float("-inf")
        # Set once a fact committed the provenance record (writer thread only).
        self.provenance_recorded = read_provenance(conn) is not None
        # Bumped (writer thread) when a fact's text changes under its id (a hash collision):
        # caches keyed by fact id that derive from the text (FTS row lengths) start over.
        self.text_generation = 0
        self._closed = False

    @classmethod
    def open(cls, directory: Path, identity: Identity | None, now: float) -> Store:
        """Lock and open ``directory``; with ``identity`` also check provenance and load FAISS."""
        directory = Path(directory).expanduser()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Internal(f"cannot create the store directory {directory}: {exc}") from None
        lock = StoreLock(directory)
        lock.acquire()
        conn: sqlite3.Connection | None = None
        try:
            conn = connect(directory / DB_FILE)
            migrate(conn, now)
            index = None
            if identity is not None:
                _check_provenance(conn, identity, directory)
                index = _load_index(conn, directory, identity)
                index.start_indexer()
            return cls(directory, lock, conn, identity, index)
        except BaseException:
            if conn is not None:
                conn.close()
            lock.release()
            raise

    def reader(self) -> sqlite3.Connection:
        """This thread's read-only connection (WAL readers never block the writer)."""
        if self._closed:
            raise Internal("the store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.db_path, readonly=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def next_seq(self) -> int:
        """The next write sequence number (call from the writer thread only)."""
        self.seq += 1
        return self.seq

    def note_expiry(self, expires_at: float) -> None:
        """Remember that a fact expires at ``expires_at`` (writer thread only)."""
        if self.next_expiry is None or expires_at < self.next_expiry:
            self.next_expiry = expires_at

    def save_index(self) -> None:
        if self.index is not None and self.identity is not None:
            try:
                self.index.save(self.directory, self.identity.model)
            except (OSError, RuntimeError) as exc:  # a cache: the next open rebuilds it
                log.warning("could not save the FAISS index: %s", exc)

    def close(self) -> None:
        """Drain the writer, save the index, close every connection, release the lock."""
        if self._closed:
            return
        self.writer.close()
        self._closed = True
        self.save_index()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        try:
            self._write_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
        self._write_conn.close()
        self._lock.release()


def _check_provenance(conn: sqlite3.Connection, identity: Identity, directory: Path) -> None:
    recorded = read_provenance(conn)
    if recorded is None or recorded == identity:
        return
    raise EmbedderMismatch(
        f"store {directory} was filled by embedder {recorded.model!r} "
        f"({recorded.dimension} dims) but the configured embedder is {identity.model!r} "
        f"({identity.dimension} dims): set VELESDB_MEMORY_EMBEDDER back to the embedder that "
        f"filled it, or point VELESDB_MEMORY_PATH at a new store (export it first with "
        f"`velesdb-memory export --output memories.jsonl`; migration comes in a later release)"
    )


def _load_index(conn: sqlite3.Connection, directory: Path, identity: Identity) -> VectorIndex:
    """The saved index reconciled with SQLite, or a rebuild when it cannot be used."""
    index = VectorIndex.load(directory, identity.dimension, identity.model)
    if index is None:
        index = VectorIndex(identity.dimension)
    max_seq, live = conn.execute(
        "SELECT coalesce(max(f.seq), 0), count(*) FROM facts f JOIN vectors v ON v.id = f.id "
        "WHERE f.kind IS NULL").fetchone()
    if index.watermark == max_seq and index.live_count == live and index.ntotal == live:
        return index
    in_db = np.fromiter((r[0] for r in conn.execute(
        "SELECT f.id FROM facts f JOIN vectors v ON v.id = f.id WHERE f.kind IS NULL")),
        dtype=np.int64)
    in_index = index.live_ids()
    extra = np.setdiff1d(in_index, in_db, assume_unique=True)
    if len(extra):
        index.remove(extra.tolist())
    missing = set(np.setdiff1d(in_db, index.live_ids(), assume_unique=True).tolist())
    if missing:
        ids: list[int] = []
        vecs: list[bytes] = []
        for fid, blob in conn.execute("SELECT f.id, v.vector FROM facts f JOIN vectors v ON "
                                      "v.id = f.id WHERE f.kind IS NULL ORDER BY f.seq"):
            if fid in missing:
                ids.append(fid)
                vecs.append(blob)
        matrix = np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(len(ids),
                                                                          identity.dimension)
        index.bulk_add(np.asarray(ids, dtype=np.int64), matrix)
    index.watermark = max_seq
    log.info("FAISS index reconciled: %d replayed, %d tombstoned", len(missing), len(extra))
    return index

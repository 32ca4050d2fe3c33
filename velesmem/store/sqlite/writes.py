"""The write jobs run by the SQLite store's writer thread, one SAVEPOINT each.

Each takes the writer's connection and returns an ``Outcome``: its result plus the in-memory
effect (FAISS update) applied after the batch commits. Raising inside a job rolls back exactly
that job's changes. Every job that changes a fact takes a fresh sequence number
(``store.next_seq``): numbers are never reused, so the FAISS watermark cannot be fooled.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from velesmem import limits
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import edge_id, to_i64, to_u64
from velesmem.store.protocol import ENTITY_HUB_KIND, FactWrite
from velesmem.store.sqlite.meta_index import index_fact, unindex_fact
from velesmem.store.sqlite.writer import Outcome

if TYPE_CHECKING:
    from velesmem.store.sqlite.backend import SqliteStore

LIVE = "(expires_at IS NULL OR expires_at > ?)"
Job = Callable[[sqlite3.Connection], Outcome[Any]]


def exists(conn: sqlite3.Connection, key: int, now: float, *, user_only: bool = False) -> bool:
    kind = " AND kind IS NULL" if user_only else ""
    return conn.execute(f"SELECT 1 FROM facts WHERE id = ? AND {LIVE}{kind}",
                        (key, now)).fetchone() is not None


def record_provenance(conn: sqlite3.Connection, model: str, dimension: int) -> None:
    """Record what filled the store if nothing is recorded yet (inside the caller's
    transaction)."""
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('provenance_model', ?)", (model,))
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('provenance_dimension', ?)", (str(dimension),))


def put_vector(conn: sqlite3.Connection, space: int, key: int, seq: int, blob: bytes) -> None:
    conn.execute("INSERT OR REPLACE INTO space_vectors (space, id, seq, vector) "
                 "VALUES (?, ?, ?, ?)", (space, key, seq, blob))


def remember(store: SqliteStore, w: FactWrite) -> Job:
    """The job upserting one fact (plus its links) and adding its vector to the index."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        key = w.key
        for n, (target, _) in enumerate(w.links):
            if not exists(conn, target, w.now):
                raise NotFound(f"links[{n}].target {to_u64(target)} is not a stored memory")
        row = conn.execute("SELECT content, kind FROM facts WHERE id = ?", (key,)).fetchone()
        if row is not None and row[1] is not None:
            raise InvalidInput(f"id {to_u64(key)} belongs to internal scaffolding")
        space = store.serving
        seq = store.next_seq()
        blob = w.vector.astype(np.float32).tobytes()
        new_vector = row is None or row[0] != w.content
        if row is None:
            conn.execute("INSERT INTO facts (id, content, metadata, kind, seq, created_at, "
                         "updated_at, expires_at, confidence) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, "
                         "?)", (key, w.content, w.metadata_json, seq, w.now, w.now,
                                w.expires_at, limits.DEFAULT_CONFIDENCE))
            conn.execute("INSERT INTO facts_fts (rowid, content) VALUES (?, ?)", (key, w.content))
        else:
            conn.execute("UPDATE facts SET content = ?, metadata = ?, seq = ?, "
                         "updated_at = ?, expires_at = ? WHERE id = ?",
                         (w.content, w.metadata_json, seq, w.now, w.expires_at, key))
            if row[0] != w.content:  # same id, other text: a hash collision; keep it coherent
                _fts_replace(conn, key, row[0], w.content)
        if new_vector:
            put_vector(conn, space.id, key, seq, blob)
        index_fact(conn, key)
        if not store.provenance_recorded:
            record_provenance(conn, space.identity.model, space.identity.dimension)
        for target, relation in w.links:
            insert_edge(conn, key, target, relation, w.now)
        store.journal_write(conn, key)
        index = store.index
        vec = w.vector.reshape(1, -1)
        text_changed = row is not None and row[0] != w.content

        def effect() -> None:
            store.provenance_recorded = True
            if text_changed:
                store.text_generation += 1
            if new_vector and index is not None:
                index.add(np.asarray([key], dtype=np.int64), vec, seq)
            if w.expires_at is not None:
                store.note_expiry(w.expires_at)

        return Outcome(key, effect)

    return job


def _fts_replace(conn: sqlite3.Connection, key: int, old: str, new: str) -> None:
    conn.execute("INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', ?, ?)",
                 (key, old))
    conn.execute("INSERT INTO facts_fts (rowid, content) VALUES (?, ?)", (key, new))


def insert_edge(conn: sqlite3.Connection, src: int, dst: int, relation: str, now: float) -> int:
    """Insert the edge src → dst (int64 keys) if absent; return its int64 key."""
    key = to_i64(edge_id(to_u64(src), to_u64(dst), relation))
    conn.execute("INSERT OR IGNORE INTO edges (id, src, dst, relation, created_at) "
                 "VALUES (?, ?, ?, ?, ?)", (key, src, dst, relation, now))
    return key


def relate(store: SqliteStore, src: int, dst: int, relation: str, now: float) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        for name, end in (("from", src), ("to", dst)):
            if not exists(conn, end, now):
                raise NotFound(f"{name} {to_u64(end)} is not a stored memory")
        key = insert_edge(conn, src, dst, relation, now)
        store.journal_write(conn, src)
        return Outcome(key)

    return job


def unrelate(store: SqliteStore, src: int, dst: int, relation: str) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        cur = conn.execute("DELETE FROM edges WHERE src = ? AND dst = ? AND relation = ?",
                           (src, dst, relation))
        if cur.rowcount:
            store.journal_write(conn, src)
        return Outcome(cur.rowcount)

    return job


def delete_facts(store: SqliteStore, conn: sqlite3.Connection, keys: list[int]) -> list[int]:
    """Delete facts (int64 keys) with their edges, then every entity hub left without a user
    fact; return the deleted user facts' keys (to tombstone in FAISS)."""
    removed: list[int] = []
    hubs: set[int] = set()
    seq = None
    for key in keys:
        row = conn.execute("SELECT content, kind FROM facts WHERE id = ?", (key,)).fetchone()
        if row is None:
            continue
        content, kind = row
        for (other,) in conn.execute(
                "SELECT f.id FROM edges e JOIN facts f ON f.id = CASE WHEN e.src = ? THEN e.dst "
                "ELSE e.src END WHERE (e.src = ? OR e.dst = ?) AND f.kind = ?",
                (key, key, key, ENTITY_HUB_KIND)):
            hubs.add(int(other))
        conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (key, key))
        if kind is None:
            conn.execute("INSERT INTO facts_fts (facts_fts, rowid, content) VALUES "
                         "('delete', ?, ?)", (key, content))
            removed.append(key)
        conn.execute("DELETE FROM facts WHERE id = ?", (key,))
        spaces = [int(s) for (s,) in conn.execute(
            "DELETE FROM space_vectors WHERE id = ? RETURNING space", (key,))]
        if spaces:
            seq = seq if seq is not None else store.next_seq()
            conn.executemany("INSERT INTO vector_deletes (space, id, seq) VALUES (?, ?, ?)",
                             [(s, key, seq) for s in spaces])
        unindex_fact(conn, key)
        store.journal_write(conn, key)
    for hub in hubs - set(keys):
        alive = conn.execute(
            "SELECT 1 FROM edges e JOIN facts f ON f.id = CASE WHEN e.src = ? THEN e.dst ELSE "
            "e.src END WHERE (e.src = ? OR e.dst = ?) AND f.kind IS NULL LIMIT 1",
            (hub, hub, hub)).fetchone()
        if alive is None:
            conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (hub, hub))
            conn.execute("DELETE FROM facts WHERE id = ?", (hub,))
            unindex_fact(conn, hub)
            store.journal_write(conn, hub)
    return removed


def _tombstone(store: SqliteStore, keys: list[int]) -> Callable[[], None] | None:
    index = store.index
    if not keys or index is None:
        return None
    return lambda: index.remove(keys)


def forget(store: SqliteStore, key: int, now: float) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[bool]:
        if not exists(conn, key, now):
            return Outcome(False)
        removed = delete_facts(store, conn, [key])
        return Outcome(True, _tombstone(store, removed))

    return job


def purge_expired(store: SqliteStore, now: float) -> Job:
    """Delete every fact whose expiry has passed (the result is how many); then record the next
    expiry."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        keys = [int(r[0]) for r in conn.execute(
            "SELECT id FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,))]
        removed = delete_facts(store, conn, keys)
        nxt = conn.execute("SELECT min(expires_at) FROM facts WHERE expires_at IS NOT NULL"
                           ).fetchone()[0]
        tombstone = _tombstone(store, removed)

        def effect() -> None:
            if tombstone is not None:
                tombstone()
            store.set_next_expiry(nxt)

        return Outcome(len(keys), effect)

    return job


def feedback(store: SqliteStore, key: int, success: bool, now: float) -> Job:
    """One atomic UPDATE: confidence ± step clamped to [0, 1], success/failure counted."""
    step = limits.FEEDBACK_SUCCESS_STEP if success else -limits.FEEDBACK_FAILURE_STEP

    def job(conn: sqlite3.Connection) -> Outcome[float]:
        row = conn.execute(
            "UPDATE facts SET confidence = round(min(1.0, max(0.0, confidence + ?)), 9), "
            "successes = successes + ?, failures = failures + ? "
            f"WHERE id = ? AND kind IS NULL AND {LIVE} RETURNING confidence",
            (step, int(success), int(not success), key, now)).fetchone()
        if row is None:
            raise NotFound(f"id {to_u64(key)} is not a stored memory")
        store.journal_write(conn, key)
        return Outcome(float(row[0]))

    return job


def restore(store: SqliteStore, key: int, confidence: float, successes: int, failures: int,
            created_at: float, updated_at: float, expires_at: float | None) -> Job:
    """Set a fact's learned state and times as exported (import); False when absent."""

    def job(conn: sqlite3.Connection) -> Outcome[bool]:
        cur = conn.execute("UPDATE facts SET confidence = ?, successes = ?, failures = ?, "
                           "created_at = ?, updated_at = ?, expires_at = ?, seq = ? WHERE id = ?",
                           (confidence, successes, failures, created_at, updated_at, expires_at,
                            store.next_seq(), key))
        if not cur.rowcount:
            return Outcome(False)
        store.journal_write(conn, key)

        def effect() -> None:
            if expires_at is not None:
                store.note_expiry(expires_at)

        return Outcome(True, effect)

    return job


def put_internal(store: SqliteStore, key: int, content: str, metadata_json: str, kind: str,
                 now: float, expires_at: float | None) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        row = conn.execute("SELECT kind FROM facts WHERE id = ?", (key,)).fetchone()
        if row is not None and row[0] is None:
            raise InvalidInput(f"id {to_u64(key)} belongs to a user fact, not internal "
                               "scaffolding")
        conn.execute(
            "INSERT INTO facts (id, content, metadata, kind, seq, created_at, updated_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "content = excluded.content, metadata = excluded.metadata, kind = excluded.kind, "
            "seq = excluded.seq, updated_at = excluded.updated_at, "
            "expires_at = excluded.expires_at",
            (key, content, metadata_json, kind, store.next_seq(), now, now, expires_at))
        index_fact(conn, key)
        store.journal_write(conn, key)

        def effect() -> None:
            if expires_at is not None:
                store.note_expiry(expires_at)

        return Outcome(key, effect)

    return job


def delete_internal(store: SqliteStore, key: int) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[bool]:
        row = conn.execute("SELECT 1 FROM facts WHERE id = ? AND kind IS NOT NULL",
                           (key,)).fetchone()
        if row is None:
            return Outcome(False)
        delete_facts(store, conn, [key])
        return Outcome(True)

    return job

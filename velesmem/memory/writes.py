"""The write jobs run by the store's writer thread, one SAVEPOINT each.

Each takes the writer's connection and returns an ``Outcome``: its result plus the in-memory
effect (FAISS update) applied after the batch commits. Raising inside a job rolls back exactly
that job's changes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from velesmem import limits
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import edge_id, to_i64
from velesmem.store import Outcome, Store
from velesmem.store.meta_index import index_fact, unindex_fact
from velesmem.store.store import record_provenance

ENTITY_HUB_KIND = "entity_hub"
LIVE = "(expires_at IS NULL OR expires_at > ?)"


@dataclass(frozen=True)
class FactWrite:
    """A validated remember: everything the job needs, computed outside the writer."""

    id: int  # u64
    content: str
    metadata_json: str
    vector: np.ndarray
    now: float
    expires_at: float | None
    links: list[tuple[int, str]]


def exists(conn: sqlite3.Connection, key: int, now: float, *, user_only: bool = False) -> bool:
    kind = " AND kind IS NULL" if user_only else ""
    return conn.execute(f"SELECT 1 FROM facts WHERE id = ? AND {LIVE}{kind}",
                        (key, now)).fetchone() is not None


def remember(store: Store, w: FactWrite):
    """The job upserting one fact (plus its links) and adding its vector to the index."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        key = to_i64(w.id)
        for n, (target, _) in enumerate(w.links):
            if not exists(conn, to_i64(target), w.now):
                raise NotFound(f"links[{n}].target {target} is not a stored memory")
        row = conn.execute("SELECT content, kind FROM facts WHERE id = ?", (key,)).fetchone()
        if row is not None and row[1] is not None:
            raise InvalidInput(f"id {w.id} belongs to internal scaffolding")
        seq = store.next_seq()
        blob = w.vector.astype(np.float32).tobytes()
        if row is None:
            conn.execute("INSERT INTO facts (id, content, metadata, kind, seq, created_at, "
                         "updated_at, expires_at, confidence) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, "
                         "?)", (key, w.content, w.metadata_json, seq, w.now, w.now,
                                w.expires_at, limits.DEFAULT_CONFIDENCE))
            conn.execute("INSERT OR REPLACE INTO vectors (id, vector) VALUES (?, ?)", (key, blob))
            conn.execute("INSERT INTO facts_fts (rowid, content) VALUES (?, ?)", (key, w.content))
        else:
            conn.execute("UPDATE facts SET content = ?, metadata = ?, seq = ?, "
                         "updated_at = ?, expires_at = ? WHERE id = ?",
                         (w.content, w.metadata_json, seq, w.now, w.expires_at, key))
            if row[0] != w.content:  # same id, other text: a hash collision; keep it coherent
                conn.execute("INSERT OR REPLACE INTO vectors (id, vector) VALUES (?, ?)",
                             (key, blob))
                _fts_replace(conn, key, row[0], w.content)
        index_fact(conn, key)
        assert store.identity is not None
        if not store.provenance_recorded:
            record_provenance(conn, store.identity)
        for target, relation in w.links:
            _insert_edge(conn, w.id, target, relation, w.now)
        index = store.index
        assert index is not None
        vec = w.vector.reshape(1, -1)
        text_changed = row is not None and row[0] != w.content

        def effect() -> None:
            store.provenance_recorded = True
            if text_changed:
                store.text_generation += 1
            index.add(np.asarray([key], dtype=np.int64), vec, seq)
            if w.expires_at is not None:
                store.note_expiry(w.expires_at)

        return Outcome(w.id, effect)

    return job


def _fts_replace(conn: sqlite3.Connection, key: int, old: str, new: str) -> None:
    conn.execute("INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', ?, ?)",
                 (key, old))
    conn.execute("INSERT INTO facts_fts (rowid, content) VALUES (?, ?)", (key, new))


def _insert_edge(conn: sqlite3.Connection, src: int, dst: int, relation: str, now: float) -> int:
    eid = edge_id(src, dst, relation)
    conn.execute("INSERT OR IGNORE INTO edges (id, src, dst, relation, created_at) "
                 "VALUES (?, ?, ?, ?, ?)", (to_i64(eid), to_i64(src), to_i64(dst), relation, now))
    return eid


def relate(src: int, dst: int, relation: str, now: float):
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        for name, end in (("from", src), ("to", dst)):
            if not exists(conn, to_i64(end), now):
                raise NotFound(f"{name} {end} is not a stored memory")
        return Outcome(_insert_edge(conn, src, dst, relation, now))

    return job


def unrelate(src: int, dst: int, relation: str):
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        cur = conn.execute("DELETE FROM edges WHERE src = ? AND dst = ? AND relation = ?",
                           (to_i64(src), to_i64(dst), relation))
        return Outcome(cur.rowcount)

    return job


def delete_facts(conn: sqlite3.Connection, keys: list[int]) -> list[int]:
    """Delete facts (int64 keys) with their edges, then every entity hub left without a user
    fact; return the deleted user facts' keys (to tombstone in FAISS)."""
    removed: list[int] = []
    hubs: set[int] = set()
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
        conn.execute("DELETE FROM vectors WHERE id = ?", (key,))
        unindex_fact(conn, key)
    for hub in hubs - set(keys):
        alive = conn.execute(
            "SELECT 1 FROM edges e JOIN facts f ON f.id = CASE WHEN e.src = ? THEN e.dst ELSE "
            "e.src END WHERE (e.src = ? OR e.dst = ?) AND f.kind IS NULL LIMIT 1",
            (hub, hub, hub)).fetchone()
        if alive is None:
            conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (hub, hub))
            conn.execute("DELETE FROM facts WHERE id = ?", (hub,))
            unindex_fact(conn, hub)
    return removed


def _tombstone(store: Store, keys: list[int]):
    index = store.index
    if not keys or index is None:
        return None
    return lambda: index.remove(keys)


def forget(store: Store, fid: int, now: float):
    def job(conn: sqlite3.Connection) -> Outcome[bool]:
        key = to_i64(fid)
        if not exists(conn, key, now):
            return Outcome(False)
        removed = delete_facts(conn, [key])
        return Outcome(True, _tombstone(store, removed))

    return job


def purge_expired(store: Store, now: float):
    """Delete every fact whose expiry has passed (the result is how many); then record the next
    expiry."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        keys = [int(r[0]) for r in conn.execute(
            "SELECT id FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,))]
        removed = delete_facts(conn, keys)
        nxt = conn.execute("SELECT min(expires_at) FROM facts WHERE expires_at IS NOT NULL"
                           ).fetchone()[0]
        tombstone = _tombstone(store, removed)

        def effect() -> None:
            if tombstone is not None:
                tombstone()
            store.next_expiry = nxt

        return Outcome(len(keys), effect)

    return job


def feedback(fid: int, success: bool, now: float):
    """One atomic UPDATE: confidence ± step clamped to [0, 1], success/failure counted."""
    step = limits.FEEDBACK_SUCCESS_STEP if success else -limits.FEEDBACK_FAILURE_STEP

    def job(conn: sqlite3.Connection) -> Outcome[float]:
        row = conn.execute(
            "UPDATE facts SET confidence = round(min(1.0, max(0.0, confidence + ?)), 9), "
            "successes = successes + ?, failures = failures + ? "
            f"WHERE id = ? AND kind IS NULL AND {LIVE} RETURNING confidence",
            (step, int(success), int(not success), to_i64(fid), now)).fetchone()
        if row is None:
            raise NotFound(f"id {fid} is not a stored memory")
        return Outcome(float(row[0]))

    return job


def put_internal(store: Store, fid: int, content: str, metadata_json: str, kind: str,
                 now: float, expires_at: float | None = None):
    """Upsert an internal fact; ``expires_at`` (None: permanent) replaces the stored expiry."""

    def job(conn: sqlite3.Connection) -> Outcome[int]:
        key = to_i64(fid)
        row = conn.execute("SELECT kind FROM facts WHERE id = ?", (key,)).fetchone()
        if row is not None and row[0] is None:
            raise InvalidInput(f"id {fid} belongs to a user fact, not internal scaffolding")
        conn.execute(
            "INSERT INTO facts (id, content, metadata, kind, seq, created_at, updated_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "content = excluded.content, metadata = excluded.metadata, kind = excluded.kind, "
            "seq = excluded.seq, updated_at = excluded.updated_at, "
            "expires_at = excluded.expires_at",
            (key, content, metadata_json, kind, store.next_seq(), now, now, expires_at))
        index_fact(conn, key)
        if expires_at is None:
            return Outcome(fid)
        return Outcome(fid, lambda: store.note_expiry(expires_at))

    return job


def delete_internal(fid: int):
    def job(conn: sqlite3.Connection) -> Outcome[bool]:
        key = to_i64(fid)
        row = conn.execute("SELECT 1 FROM facts WHERE id = ? AND kind IS NOT NULL",
                           (key,)).fetchone()
        if row is None:
            return Outcome(False)
        delete_facts(conn, [key])
        return Outcome(True)

    return job


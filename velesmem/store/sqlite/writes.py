"""The write jobs run by the SQLite store's writer thread, one SAVEPOINT each.

Each takes the writer's connection and returns an ``Outcome``: its result plus the in-memory
effect (FAISS update) applied after the batch commits. Raising inside a job rolls back exactly
that job's changes. Every job that changes a fact takes a fresh sequence number
(``store.next_seq``): numbers are never reused, so the FAISS watermark cannot be fooled.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from velesmem import limits
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import edge_id, to_i64, to_u64
from velesmem.store.rows import scalar
from velesmem.store.types import (
    CAUSE_HELPFUL,
    CAUSE_NOT_HELPFUL,
    ENTITY_HUB_KIND,
    HUB_NAME_KEY,
    HUB_SOURCE_KEY,
    FactWrite,
    GraphWrite,
    HubWrite,
)
from velesmem.store.types import Job as JobRecord
from velesmem.store import rules
from velesmem.store.sqlite.meta_index import index_fact, unindex_fact
from velesmem.store.sqlite.writer import Outcome

if TYPE_CHECKING:
    from velesmem.store.sqlite.backend import SqliteStore

LIVE = rules.live(rules.SQLITE)
_MISSING = object()
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
        for n, (target, _) in enumerate(w.links):
            if not exists(conn, target, w.now):
                raise NotFound(f"links[{n}].target {to_u64(target)} is not a stored memory")
        effect = upsert_fact(store, conn, w)
        for target, relation in w.links:
            insert_edge(conn, w.key, target, relation, w.now)
        for target, relation in w.derived:
            if target != w.key and exists(conn, target, w.now, user_only=True):
                insert_edge(conn, w.key, target, relation, w.now)
        return Outcome(w.key, effect)

    return job


def upsert_fact(store: SqliteStore, conn: sqlite3.Connection,
                w: FactWrite) -> Callable[[], None]:
    """Insert or update a user fact and its vector (inside the caller's savepoint); return the
    in-memory effect to apply after the commit."""
    key = w.key
    row = conn.execute("SELECT content, kind FROM facts WHERE id = ?", (key,)).fetchone()
    if row is not None and row[1] is not None:
        raise InvalidInput(f"id {to_u64(key)} belongs to internal scaffolding")
    space = store.serving
    seq = store.next_seq()
    # no vector yet (the model is loading): the fact is durable now, the backlog embeds it
    embedded = w.vector is not None and space is not None
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
    if new_vector and embedded:
        assert space is not None and w.vector is not None  # what ``embedded`` says
        put_vector(conn, space.id, key, seq, w.vector.astype(np.float32).tobytes())
    index_fact(conn, key)
    if embedded and not store.provenance_recorded:
        assert space is not None
        record_provenance(conn, space.identity.model, space.identity.dimension)
    if new_vector:  # only a new vector needs the migration's replay (edges are shared)
        store.journal_write(conn, key)
    index = store.index
    vec = w.vector.reshape(1, -1) if embedded and w.vector is not None else None
    text_changed = row is not None and row[0] != w.content

    def effect() -> None:
        if embedded:
            store.provenance_recorded = True
        if text_changed:
            store.text_generation += 1
        if new_vector and index is not None and vec is not None:
            index.add(np.asarray([key], dtype=np.int64), vec, seq)
        if w.expires_at is not None:
            store.note_expiry(w.expires_at)

    return effect


def upsert_hub(store: SqliteStore, conn: sqlite3.Connection, hub: HubWrite, now: float) -> bool:
    """Create the hub, or merge its attributes into the one stored; False when its key belongs
    to a user fact (a hash collision: the hub is left out)."""
    row = conn.execute("SELECT kind, metadata FROM facts WHERE id = ?", (hub.key,)).fetchone()
    if row is not None and row[0] != ENTITY_HUB_KIND:
        return False
    meta = json.loads(row[1]) if row is not None else {
        HUB_NAME_KEY: hub.name, HUB_SOURCE_KEY: hub.source}
    changed = row is None
    for name, value in hub.attributes:
        if meta.get(name, _MISSING) != value:
            meta[name] = value
            changed = True
    if not changed:
        return True
    encoded = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    conn.execute(
        "INSERT INTO facts (id, content, metadata, kind, seq, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET metadata = excluded.metadata, "
        "seq = excluded.seq, updated_at = excluded.updated_at",
        (hub.key, f"Entity: {hub.name}", encoded, ENTITY_HUB_KIND, store.next_seq(), now, now))
    index_fact(conn, hub.key)
    return True


def write_graph(store: SqliteStore, graph: GraphWrite, job_id: str | None,
                result: dict[str, Any] | None) -> Job:
    """Facts, hubs and edges in one savepoint; with ``job_id`` that job commits with them."""

    def job(conn: sqlite3.Connection) -> Outcome[list[int]]:
        effects = [upsert_fact(store, conn, w) for w in graph.facts]
        refused = {h.key for h in graph.hubs if not upsert_hub(store, conn, h, graph.now)}
        ends = sorted({k for e in graph.edges for k in e[:2]} - refused)
        live = live_keys(conn, ends, graph.now)
        for src, dst, relation in graph.edges:
            if src in live and dst in live:
                insert_edge(conn, src, dst, relation, graph.now)
        conn.executemany("DELETE FROM edges WHERE src = ? AND dst = ? AND relation = ?",
                         graph.unlink)
        for k, d in graph.confidence_deltas:
            row = conn.execute(
                f"UPDATE facts SET confidence = {rules.clamped_confidence(rules.SQLITE)} "
                "WHERE id = ? AND kind IS NULL RETURNING confidence", (d, k)).fetchone()
            if row is not None:
                record_confidence(conn, k, float(row[0]), graph.confidence_cause, graph.now)
        if job_id is not None:
            _set_job(conn, job_id, graph.now, state="committed", result=result)

        def effect() -> None:
            for e in effects:
                e()

        return Outcome([w.key for w in graph.facts], effect)

    return job


def _live_user_keys(conn: sqlite3.Connection, keys: list[int]) -> set[int]:
    """The keys that are user facts (expiry not checked: an expired fact is purged later)."""
    if not keys:
        return set()
    return {int(k) for (k,) in conn.execute(
        "SELECT id FROM facts WHERE id IN (SELECT value FROM json_each(?)) AND kind IS NULL",
        (json.dumps(keys),))}


def live_keys(conn: sqlite3.Connection, keys: list[int], now: float) -> set[int]:
    """The live facts (user or scaffolding) among ``keys``."""
    if not keys:
        return set()
    return {int(k) for (k,) in conn.execute(
        f"SELECT id FROM facts WHERE id IN (SELECT value FROM json_each(?)) AND {LIVE}",
        (json.dumps(keys), now))}


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
        return Outcome(key)

    return job


def unrelate(store: SqliteStore, src: int, dst: int, relation: str) -> Job:
    def job(conn: sqlite3.Connection) -> Outcome[int]:
        cur = conn.execute("DELETE FROM edges WHERE src = ? AND dst = ? AND relation = ?",
                           (src, dst, relation))
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
        conn.execute("DELETE FROM confidence_events WHERE fact = ?", (key,))
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
        if kind is None:
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
            f"SELECT id FROM facts WHERE {rules.expired(rules.SQLITE)}", (now,))]
        removed = delete_facts(store, conn, keys)
        nxt = scalar(conn.execute("SELECT min(expires_at) FROM facts WHERE expires_at IS NOT NULL"))
        tombstone = _tombstone(store, removed)

        def effect() -> None:
            if tombstone is not None:
                tombstone()
            store.set_next_expiry(nxt)

        return Outcome(len(keys), effect)

    return job


def record_confidence(conn: sqlite3.Connection, key: int, confidence: float, cause: str,
                      now: float) -> None:
    """Add a change to fact ``key``'s confidence history, in the caller's transaction, and drop
    what lies beyond the newest ``MAX_CONFIDENCE_EVENTS`` of that fact."""
    conn.execute("INSERT INTO confidence_events (fact, at, confidence, cause) "
                 "VALUES (?, ?, ?, ?)", (key, now, confidence, cause))
    conn.execute("DELETE FROM confidence_events WHERE fact = ? AND id <= (SELECT id FROM "
                 "confidence_events WHERE fact = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                 (key, key, limits.MAX_CONFIDENCE_EVENTS))


def feedback(store: SqliteStore, key: int, success: bool, now: float) -> Job:
    """One atomic UPDATE: confidence ± step clamped to [0, 1], success/failure counted, and
    the change recorded in the fact's confidence history."""
    step = rules.feedback_step(success)

    def job(conn: sqlite3.Connection) -> Outcome[float]:
        row = conn.execute(
            f"UPDATE facts SET confidence = {rules.clamped_confidence(rules.SQLITE)}, "
            "successes = successes + ?, failures = failures + ? "
            f"WHERE id = ? AND kind IS NULL AND {LIVE} RETURNING confidence",
            (step, int(success), int(not success), key, now)).fetchone()
        if row is None:
            raise NotFound(f"id {to_u64(key)} is not a stored memory")
        record_confidence(conn, key, float(row[0]),
                          CAUSE_HELPFUL if success else CAUSE_NOT_HELPFUL, now)
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


# --- durable jobs ------------------------------------------------------------------------------
JOB_COLUMNS = ("id, kind, state, fingerprint, created_at, updated_at, payload, output, result, "
               "error")


def job_from_row(row: tuple[Any, ...]) -> JobRecord:
    return JobRecord(row[0], row[1], row[2], row[3], float(row[4]), float(row[5]),
                     None if row[6] is None else json.loads(row[6]), row[7],
                     None if row[8] is None else json.loads(row[8]), row[9])


def _get_job(conn: sqlite3.Connection, job_id: str) -> JobRecord | None:
    row = conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return None if row is None else job_from_row(row)


def _set_job(conn: sqlite3.Connection, job_id: str, now: float, *, state: str | None = None,
             output: str | None = None, result: dict[str, Any] | None = None,
             error: str | None = None) -> JobRecord:
    current = _get_job(conn, job_id)
    if current is None:
        raise NotFound(f"no job {job_id}")
    new_state = state or current.state
    terminal = rules.is_terminal(new_state)
    conn.execute(
        "UPDATE jobs SET state = ?, updated_at = ?, output = ?, result = ?, error = ?, "
        "payload = ? WHERE id = ?",
        (new_state, now, None if terminal else (output if output is not None else current.output),
         json.dumps(result) if result is not None else (
             None if current.result is None else json.dumps(current.result)),
         error if error is not None else current.error,
         None if terminal or current.payload is None else json.dumps(current.payload), job_id))
    found = _get_job(conn, job_id)
    assert found is not None
    return found


def create_job(job: JobRecord, max_pending: int) -> Job:
    def run(conn: sqlite3.Connection) -> Outcome[tuple[JobRecord, bool]]:
        existing = _get_job(conn, job.id)
        if existing is not None:
            return Outcome((existing, False))
        pending = scalar(conn.execute(f"SELECT count(*) FROM jobs WHERE kind = ? AND "
                                      f"{rules.pending()}", (job.kind,)))
        if pending >= max_pending:
            raise InvalidInput(f"{pending} {job.kind} jobs are still pending (the cap is "
                               f"{max_pending}): wait for some to finish (extraction_status), "
                               "then retry")
        conn.execute(f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (job.id, job.kind, job.state, job.fingerprint, job.created_at,
                      job.updated_at, None if job.payload is None else json.dumps(job.payload),
                      job.output, None if job.result is None else json.dumps(job.result),
                      job.error))
        return Outcome((job, True))

    return run


def update_job(job_id: str, now: float, **changes: Any) -> Job:
    def run(conn: sqlite3.Connection) -> Outcome[JobRecord]:
        return Outcome(_set_job(conn, job_id, now, **changes))

    return run


def claim_job(kind: str, now: float) -> Job:
    def run(conn: sqlite3.Connection) -> Outcome[JobRecord | None]:
        row = conn.execute(f"SELECT id FROM jobs WHERE kind = ? AND {rules.claimable()} "
                           f"ORDER BY {rules.CLAIM_ORDER} LIMIT 1", (kind,)).fetchone()
        if row is None:
            return Outcome(None)
        return Outcome(_set_job(conn, row[0], now, state="running"))

    return run

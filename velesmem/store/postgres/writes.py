"""The PostgreSQL store's write operations, each one transaction on a pooled connection.

Each job takes a connection inside an open transaction and returns an ``Outcome`` (its result
and an in-process effect run after the commit). Raising rolls back everything the job did.
Concurrency comes from row locks, not from a single writer:

- ``remember`` locks its fact row (``FOR NO KEY UPDATE``) or inserts it with ``ON CONFLICT DO
  NOTHING``; two daemons remembering one text converge on one row (same content-derived id);
- links and ``relate`` check their ends ``FOR KEY SHARE`` (as the foreign keys do), so a
  concurrent forget either waits for the edge and deletes it with the fact, or has deleted the
  fact first and the edge is refused: no edge ever dangles (the foreign keys guarantee it too);
- ``feedback`` is one ``UPDATE … RETURNING``: concurrent nudges serialise on the row;
- deletions cascade (edges, postings, metadata rows, vectors go with their fact).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import psycopg

from velesmem import limits
from velesmem.errors import Internal, InvalidInput, NotFound
from velesmem.ids import edge_id, to_i64, to_u64
from velesmem.store import rules
from velesmem.store.postgres import spaces, text
from velesmem.store.postgres.connection import Keys
from velesmem.store.postgres.meta_index import index_fact
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
from velesmem.validate import dumps

if TYPE_CHECKING:
    from velesmem.store.postgres.backend import PostgresStore

T = TypeVar("T")
Conn = psycopg.Connection[Any]
LIVE = rules.live(rules.POSTGRES)
# A JSON escape of U+0000 (not an escaped backslash followed by "u0000").
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_MISSING = object()


@dataclass
class Outcome(Generic[T]):
    """What a job returns: its result and an optional effect to apply after the commit."""

    result: T
    effect: Callable[[], None] | None = None


Job = Callable[[Conn], Outcome[Any]]


def refuse_nul(field: str, value: str, *, json_text: bool = False) -> None:
    """PostgreSQL text and jsonb cannot hold U+0000: refuse it before anything is written."""
    if (_JSON_NUL.search(value) if json_text else "\x00" in value):
        raise InvalidInput(f"{field} contains the NUL character (U+0000), which the PostgreSQL "
                           "backend cannot store: remove it")


def live_ends(conn: Conn, keys: list[int], now: float) -> set[int]:
    """Which of ``keys`` are live facts, share-locked until the transaction ends (a concurrent
    forget waits for it)."""
    rows = conn.execute(f"SELECT id FROM facts WHERE id = ANY(%b) AND {LIVE} "
                        "ORDER BY id FOR KEY SHARE", (Keys(keys), now)).fetchall()
    return {int(r[0]) for r in rows}


def record_provenance(conn: Conn, model: str, dimension: int) -> None:
    conn.execute("INSERT INTO meta VALUES ('provenance_model', %s), ('provenance_dimension', %s) "
                 "ON CONFLICT (key) DO NOTHING", (model, str(dimension)))


def insert_edge(conn: Conn, src: int, dst: int, relation: str, now: float) -> int:
    """Insert the edge src → dst (int64 keys) if absent; return its int64 key."""
    key = to_i64(edge_id(to_u64(src), to_u64(dst), relation))
    conn.execute("INSERT INTO edges (id, src, dst, relation, created_at) VALUES "
                 "(%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                 (key, src, dst, relation, now))
    return key


def _lock_fact(conn: Conn, key: int, metadata_json: str) -> tuple[str, str | None, bool] | None:
    row = conn.execute("SELECT content, kind, metadata = %s::jsonb FROM facts WHERE id = %s "
                       "FOR NO KEY UPDATE", (metadata_json, key)).fetchone()
    return None if row is None else (row[0], row[1], bool(row[2]))


def upsert_fact(store: PostgresStore, conn: Conn, w: FactWrite) -> Callable[[], None]:
    """Insert or update one user fact with its postings, metadata rows and vector (inside the
    caller's transaction); return the in-process effect to apply after the commit."""
    space = store.serving
    if space is None and w.vector is not None:
        raise Internal("the store was opened without an embedder")
    # no vector yet (the model is loading): the fact is durable now, the backlog embeds it
    embedded = space is not None and w.vector is not None
    key = w.key
    row = _lock_fact(conn, key, w.metadata_json)
    if row is None:
        inserted = conn.execute(
            "INSERT INTO facts (id, content, metadata, kind, created_at, updated_at, "
            "expires_at, confidence) VALUES (%s, %s, %s::jsonb, NULL, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (key, w.content, w.metadata_json, w.now, w.now, w.expires_at,
             limits.DEFAULT_CONFIDENCE)).fetchone()
        if inserted is None:  # another transaction inserted it first: update that row
            row = _lock_fact(conn, key, w.metadata_json)
            assert row is not None
    if row is not None and row[1] is not None:
        raise InvalidInput(f"id {to_u64(key)} belongs to internal scaffolding")
    if row is None:
        conn.execute(text.INDEX_SQL, {"content": w.content, "id": key})
        index_fact(conn, key, fresh=True)
        if embedded:
            assert space is not None and w.vector is not None  # what ``embedded`` says
            spaces.put_vector(conn, space.id, key, w.vector)
    else:
        content, _, same_metadata = row
        conn.execute("UPDATE facts SET content = %s, metadata = %s::jsonb, "
                     "seq = nextval('fact_seq'), updated_at = %s, expires_at = %s "
                     "WHERE id = %s",
                     (w.content, w.metadata_json, w.now, w.expires_at, key))
        if content != w.content:  # same id, other text: a hash collision; keep it coherent
            conn.execute(text.UNCOUNT_SQL, (Keys([key]),))
            conn.execute(text.UNINDEX_SQL, (key,))
            conn.execute(text.INDEX_SQL, {"content": w.content, "id": key})
            if embedded:
                assert space is not None and w.vector is not None  # what ``embedded`` says
                spaces.put_vector(conn, space.id, key, w.vector)
        if not same_metadata:
            index_fact(conn, key)
    if embedded and not store.provenance_recorded:
        assert space is not None
        record_provenance(conn, space.identity.model, space.identity.dimension)

    def effect() -> None:
        if embedded:
            store.provenance_recorded = True
        if w.expires_at is not None:
            store.note_expiry(w.expires_at)

    return effect


def remember(store: PostgresStore, w: FactWrite) -> Job:
    """Upsert one user fact (``upsert_fact``) and its links, whose targets must be live."""
    refuse_nul("fact", w.content)
    refuse_nul("metadata", w.metadata_json, json_text=True)

    def job(conn: Conn) -> Outcome[int]:
        if w.links:
            targets = [t for t, _ in w.links]
            alive = live_ends(conn, targets, w.now)
            for n, target in enumerate(targets):
                if target not in alive:
                    raise NotFound(f"links[{n}].target {to_u64(target)} is not a stored memory")
        effect = upsert_fact(store, conn, w)
        for target, relation in w.links:
            insert_edge(conn, w.key, target, relation, w.now)
        if w.derived:
            alive = live_ends(conn, [t for t, _ in w.derived], w.now)
            for target, relation in w.derived:
                if target != w.key and target in alive:
                    insert_edge(conn, w.key, target, relation, w.now)
        return Outcome(w.key, effect)

    return job


def upsert_hub(conn: Conn, hub: HubWrite, now: float) -> bool:
    """Create the hub, or merge its attributes into the stored one; False when its key belongs
    to another kind of fact (a hash collision: the hub is left out)."""
    for _ in range(2):
        row = conn.execute("SELECT kind, metadata FROM facts WHERE id = %s FOR NO KEY UPDATE",
                           (hub.key,)).fetchone()
        if row is not None and row[0] != ENTITY_HUB_KIND:
            return False
        meta = dict(row[1]) if row is not None else {HUB_NAME_KEY: hub.name,
                                                     HUB_SOURCE_KEY: hub.source}
        changed = row is None
        for name, value in hub.attributes:
            if meta.get(name, _MISSING) != value:
                meta[name] = value
                changed = True
        if not changed:
            return True
        encoded = dumps(meta)
        refuse_nul("hub metadata", encoded, json_text=True)
        if row is not None:
            conn.execute("UPDATE facts SET metadata = %s::jsonb, seq = nextval('fact_seq'), "
                         "updated_at = %s WHERE id = %s", (encoded, now, hub.key))
            index_fact(conn, hub.key)
            return True
        inserted = conn.execute(
            "INSERT INTO facts (id, content, metadata, kind, created_at, updated_at) VALUES "
            "(%s, %s, %s::jsonb, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
            (hub.key, f"Entity: {hub.name}", encoded, ENTITY_HUB_KIND, now, now)).fetchone()
        if inserted is not None:
            index_fact(conn, hub.key, fresh=True)
            return True
        # created by another transaction meanwhile: merge into that one
    return False


def write_graph(store: PostgresStore, graph: GraphWrite, job_id: str | None,
                result: dict[str, Any] | None) -> Job:
    """Facts, hubs and edges in one transaction; with ``job_id`` that job commits with them."""
    for w in graph.facts:
        refuse_nul("fact", w.content)
        refuse_nul("metadata", w.metadata_json, json_text=True)

    def job(conn: Conn) -> Outcome[list[int]]:
        from velesmem.store.postgres import jobs

        effects = [upsert_fact(store, conn, w) for w in graph.facts]
        refused = {h.key for h in graph.hubs if not upsert_hub(conn, h, graph.now)}
        ends = sorted({k for e in graph.edges for k in e[:2]} - refused)
        live = live_ends(conn, ends, graph.now) if ends else set()
        for src, dst, relation in graph.edges:
            if src in live and dst in live:
                insert_edge(conn, src, dst, relation, graph.now)
        for src, dst, relation in graph.unlink:
            conn.execute("DELETE FROM edges WHERE src = %s AND dst = %s AND relation = %s",
                         (src, dst, relation))
        for key, delta in graph.confidence_deltas:
            row = conn.execute(
                f"UPDATE facts SET confidence = {rules.clamped_confidence(rules.POSTGRES)} "
                "WHERE id = %s AND kind IS NULL RETURNING confidence", (delta, key)).fetchone()
            if row is not None:
                record_confidence(conn, key, float(row[0]), graph.confidence_cause, graph.now)
        if job_id is not None:
            jobs.set_job(conn, job_id, graph.now, state="committed", result=result)

        def effect() -> None:
            for e in effects:
                e()
            if job_id is not None:
                store.leases.release(job_id)

        return Outcome([w.key for w in graph.facts], effect)

    return job


def relate(store: PostgresStore, src: int, dst: int, relation: str, now: float) -> Job:
    def job(conn: Conn) -> Outcome[int]:
        alive = live_ends(conn, [src, dst], now)
        for name, end in (("from", src), ("to", dst)):
            if end not in alive:
                raise NotFound(f"{name} {to_u64(end)} is not a stored memory")
        key = insert_edge(conn, src, dst, relation, now)
        return Outcome(key)

    return job


def unrelate(store: PostgresStore, src: int, dst: int, relation: str) -> Job:
    def job(conn: Conn) -> Outcome[int]:
        removed = conn.execute("DELETE FROM edges WHERE src = %s AND dst = %s AND relation = %s",
                               (src, dst, relation)).rowcount
        return Outcome(int(removed))

    return job


def delete_facts(store: PostgresStore, conn: Conn, keys: list[int]) -> list[int]:
    """Delete facts (int64 keys) with everything hanging off them, then every entity hub left
    without a user fact; return the keys deleted."""
    if not keys:
        return []
    locked = [int(r[0]) for r in conn.execute(
        "SELECT id FROM facts WHERE id = ANY(%b) ORDER BY id FOR UPDATE", (Keys(keys),))]
    if not locked:
        return []
    hubs = {int(r[0]) for r in conn.execute(
        "SELECT DISTINCT f.id FROM edges e JOIN facts f ON f.id = CASE WHEN e.src = ANY(%b) "
        "THEN e.dst ELSE e.src END WHERE (e.src = ANY(%b) OR e.dst = ANY(%b)) AND f.kind = %s",
        (Keys(locked), Keys(locked), Keys(locked), ENTITY_HUB_KIND))}
    conn.execute(text.UNCOUNT_SQL, (Keys(locked),))
    conn.execute("DELETE FROM facts WHERE id = ANY(%b)", (Keys(locked),))
    orphans = [int(r[0]) for r in conn.execute(
        "SELECT h.id FROM facts h WHERE h.id = ANY(%b) AND NOT EXISTS (SELECT 1 FROM edges e "
        "JOIN facts f ON f.id = CASE WHEN e.src = h.id THEN e.dst ELSE e.src END "
        "WHERE (e.src = h.id OR e.dst = h.id) AND f.kind IS NULL) ORDER BY h.id FOR UPDATE",
        (Keys(sorted(hubs - set(locked))),))] if hubs - set(locked) else []
    if orphans:
        conn.execute("DELETE FROM facts WHERE id = ANY(%b)", (Keys(orphans),))
    return locked


def forget(store: PostgresStore, key: int, now: float) -> Job:
    def job(conn: Conn) -> Outcome[bool]:
        row = conn.execute(f"SELECT 1 FROM facts WHERE id = %s AND {LIVE} FOR UPDATE",
                           (key, now)).fetchone()
        if row is None:
            return Outcome(False)
        return Outcome(bool(delete_facts(store, conn, [key])))

    return job


def purge_expired(store: PostgresStore, now: float, lock: int) -> Job:
    """Delete every fact whose expiry has passed; one daemon at a time (an advisory lock: a
    daemon finding another sweeping leaves it the work and reports 0)."""

    def job(conn: Conn) -> Outcome[int]:
        if not scalar(conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (lock,))):
            return Outcome(0)
        keys = [int(r[0]) for r in conn.execute(
            f"SELECT id FROM facts WHERE {rules.expired(rules.POSTGRES)}", (now,))]
        return Outcome(len(delete_facts(store, conn, keys)))

    return job


def record_confidence(conn: Conn, key: int, confidence: float, cause: str, now: float) -> None:
    """Add a change to fact ``key``'s confidence history, in the caller's transaction (which
    holds the fact's row lock), and drop what lies beyond the newest ``MAX_CONFIDENCE_EVENTS``."""
    conn.execute("INSERT INTO confidence_events (fact, at, confidence, cause) "
                 "VALUES (%s, %s, %s, %s)", (key, now, confidence, cause))
    conn.execute("DELETE FROM confidence_events WHERE fact = %s AND id <= (SELECT id FROM "
                 "confidence_events WHERE fact = %s ORDER BY id DESC LIMIT 1 OFFSET %s)",
                 (key, key, limits.MAX_CONFIDENCE_EVENTS))


def feedback(store: PostgresStore, key: int, success: bool, now: float) -> Job:
    """One atomic UPDATE: confidence ± step clamped to [0, 1], success/failure counted, and
    the change recorded in the fact's confidence history."""
    step = rules.feedback_step(success)

    def job(conn: Conn) -> Outcome[float]:
        row = conn.execute(
            f"UPDATE facts SET confidence = {rules.clamped_confidence(rules.POSTGRES)}, "
            "successes = successes + %s, "
            f"failures = failures + %s WHERE id = %s AND kind IS NULL AND {LIVE} "
            "RETURNING confidence",
            (step, int(success), int(not success), key, now)).fetchone()
        if row is None:
            raise NotFound(f"id {to_u64(key)} is not a stored memory")
        record_confidence(conn, key, float(row[0]),
                          CAUSE_HELPFUL if success else CAUSE_NOT_HELPFUL, now)
        return Outcome(float(row[0]))

    return job


def restore(store: PostgresStore, key: int, confidence: float, successes: int, failures: int,
            created_at: float, updated_at: float, expires_at: float | None) -> Job:
    """Set a fact's learned state and times as exported (import); False when absent."""

    def job(conn: Conn) -> Outcome[bool]:
        n = conn.execute("UPDATE facts SET confidence = %s, successes = %s, failures = %s, "
                         "created_at = %s, updated_at = %s, expires_at = %s, "
                         "seq = nextval('fact_seq') WHERE id = %s",
                         (confidence, successes, failures, created_at, updated_at, expires_at,
                          key)).rowcount
        if not n:
            return Outcome(False)

        def effect() -> None:
            if expires_at is not None:
                store.note_expiry(expires_at)

        return Outcome(True, effect)

    return job


def put_internal(store: PostgresStore, key: int, content: str, metadata_json: str, kind: str,
                 now: float, expires_at: float | None) -> Job:
    refuse_nul("content", content)
    refuse_nul("kind", kind)
    refuse_nul("metadata", metadata_json, json_text=True)

    def job(conn: Conn) -> Outcome[int]:
        row = conn.execute(
            "INSERT INTO facts AS f (id, content, metadata, kind, created_at, updated_at, "
            "expires_at) VALUES (%s, %s, %s::jsonb, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE "
            "SET content = excluded.content, metadata = excluded.metadata, kind = excluded.kind, "
            "seq = nextval('fact_seq'), updated_at = excluded.updated_at, "
            "expires_at = excluded.expires_at WHERE f.kind IS NOT NULL "
            "RETURNING (xmax = 0)", (key, content, metadata_json, kind, now, now,
                                     expires_at)).fetchone()
        if row is None:
            raise InvalidInput(f"id {to_u64(key)} belongs to a user fact, not internal "
                               "scaffolding")
        index_fact(conn, key, fresh=bool(row[0]))

        def effect() -> None:
            if expires_at is not None:
                store.note_expiry(expires_at)

        return Outcome(key, effect)

    return job


def delete_internal(store: PostgresStore, key: int) -> Job:
    def job(conn: Conn) -> Outcome[bool]:
        row = conn.execute("SELECT 1 FROM facts WHERE id = %s AND kind IS NOT NULL FOR UPDATE",
                           (key,)).fetchone()
        if row is None:
            return Outcome(False)
        delete_facts(store, conn, [key])
        return Outcome(True)

    return job

"""``velesdb-memory verify`` on PostgreSQL: check the store's invariants, repair the derived.

Checks: the schema version; every user fact has a vector in the serving space and every vector
belongs to a user fact; the space's HNSW index exists and is valid; no edge points at a missing
fact; the text postings, fact lengths and corpus totals match what PostgreSQL's parser makes of
the facts now; the metadata rows match every fact's metadata. The postings, totals, metadata
rows, the HNSW index and vectors (re-embedded by the serving embedder) are derived: ``repair``
rebuilds them in one transaction. A dangling edge is reported, never guessed at (the foreign
keys make one impossible short of a damaged database).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from velesmem.store.postgres import meta_index, spaces, text
from velesmem.store.postgres.schema import SCHEMA_VERSION, current_version
from velesmem.store.rows import one, scalar
from velesmem.store.types import Problem

if TYPE_CHECKING:
    from velesmem.store.postgres.backend import PostgresStore

SHOWN = 5
Conn = psycopg.Connection[Any]


def _ids(rows: list[int]) -> str:
    shown = ", ".join(str(r & 0xFFFFFFFFFFFFFFFF) for r in rows[:SHOWN])
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return shown + more


def verify(store: PostgresStore, conn: Conn) -> list[Problem]:
    version = current_version(conn)
    if version != SCHEMA_VERSION:
        return [Problem("schema", f"schema version {version}, expected {SCHEMA_VERSION}",
                        derived=False)]
    problems = _vectors(store, conn)
    problems += _dangling_edges(conn)
    problems += _text(conn)
    problems += _meta(conn)
    return problems


def _vectors(store: PostgresStore, conn: Conn) -> list[Problem]:
    space = store.serving
    if space is None:
        sid = spaces.serving_space_id(conn)
        space = None if sid is None else spaces.read_space(conn, sid)
    users = int(scalar(conn.execute("SELECT count(*) FROM facts WHERE kind IS NULL")))
    if space is None:
        if users:
            return [Problem("vectors", f"{users} facts but no serving embedding space",
                            derived=False)]
        return []
    out: list[Problem] = []
    name = spaces.table(space.id)
    if scalar(conn.execute("SELECT to_regclass(%s)", (name,))) is None:
        return [Problem("vectors", f"the vector table of space {space.id} is missing",
                        derived=True)]
    missing = [int(r[0]) for r in conn.execute(
        f"SELECT f.id FROM facts f WHERE f.kind IS NULL AND NOT EXISTS (SELECT 1 FROM {name} v "
        "WHERE v.id = f.id) ORDER BY f.id")]
    if missing:
        out.append(Problem("vectors", f"{len(missing)} facts have no vector in the serving space "
                           f"({space.identity.model}): {_ids(missing)}", derived=True))
    orphans = [int(r[0]) for r in conn.execute(
        f"SELECT v.id FROM {name} v WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = v.id "
        "AND f.kind IS NULL) ORDER BY v.id")]
    if orphans:
        out.append(Problem("vectors", f"{len(orphans)} vectors belong to no user fact: "
                           f"{_ids(orphans)}", derived=True))
    if spaces.index_valid(conn, space.id) is False:
        out.append(Problem("hnsw", f"the HNSW index of space {space.id} is missing or invalid",
                           derived=True))
    return out


def _dangling_edges(conn: Conn) -> list[Problem]:
    rows = conn.execute(
        "SELECT e.src, e.dst FROM edges e WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE "
        "f.id = e.src) OR NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = e.dst)").fetchall()
    if not rows:
        return []
    shown = "; ".join(f"{s & 0xFFFFFFFFFFFFFFFF} -> {d & 0xFFFFFFFFFFFFFFFF}"
                      for s, d in rows[:SHOWN])
    return [Problem("edges", f"{len(rows)} edges point at a missing fact: {shown}",
                    derived=False)]


_EXPECTED_TERMS = f"""
    SELECT t.id, t.lexeme, t.tf, n.dl FROM
        (SELECT f.id, u.lexeme, cardinality(u.positions) AS tf FROM facts f,
                unnest(to_tsvector('{text.TS_CONFIG}', f.content)) u WHERE f.kind IS NULL) t
        JOIN (SELECT f.id, coalesce(sum(cardinality(u.positions)), 0)::integer AS dl
              FROM facts f LEFT JOIN LATERAL unnest(to_tsvector('{text.TS_CONFIG}', f.content))
              u ON TRUE WHERE f.kind IS NULL GROUP BY f.id) n USING (id)"""


def _text(conn: Conn) -> list[Problem]:
    lacking, extra = one(conn.execute(
        f"SELECT (SELECT count(*) FROM ({_EXPECTED_TERMS} EXCEPT SELECT id, lexeme, tf, dl FROM "
        f"fact_terms) a), (SELECT count(*) FROM (SELECT id, lexeme, tf, dl FROM fact_terms "
        f"EXCEPT {_EXPECTED_TERMS}) b)"))
    out = []
    if lacking or extra:
        out.append(Problem("text", f"the full-text postings differ from the facts: {lacking} "
                           f"missing, {extra} extra", derived=True))
    docs, tokens, want_docs, want_tokens = one(conn.execute(
        "SELECT (SELECT coalesce(sum(docs), 0) FROM text_stats), (SELECT coalesce(sum(tokens), "
        "0) FROM text_stats), count(*), coalesce(sum(ntokens), 0) FROM facts "
        "WHERE kind IS NULL"))
    if (int(docs), int(tokens)) != (int(want_docs), int(want_tokens)):
        out.append(Problem("text", f"the BM25 corpus totals say {docs} facts / {tokens} tokens, "
                           f"the facts {want_docs} / {want_tokens}", derived=True))
    return out


def _meta(conn: Conn) -> list[Problem]:
    expected = meta_index.INDEX_ALL_SQL.split("SELECT", 1)[1]
    cols = "id, key, type, num, str, js"
    lacking, extra = one(conn.execute(
        f"SELECT (SELECT count(*) FROM (SELECT {expected} EXCEPT SELECT {cols} FROM "
        f"{meta_index.TABLE}) a), (SELECT count(*) FROM (SELECT {cols} FROM {meta_index.TABLE} "
        f"EXCEPT SELECT {expected}) b)"))
    if lacking or extra:
        return [Problem("metadata", f"the metadata index differs from the facts: {lacking} rows "
                        f"missing, {extra} extra", derived=True)]
    return []


def repair(store: PostgresStore, conn: Conn, report: Callable[[str], None],
           embed: Callable[[list[str]], np.ndarray] | None) -> list[Problem]:
    """Rebuild every derived structure in one transaction; return the problems left."""
    space = store.serving
    with conn.transaction():
        report("rebuilding the full-text postings")
        for statement in text.REBUILD_SQL:
            conn.execute(statement)
        report("rebuilding the metadata index")
        conn.execute(f"DELETE FROM {meta_index.TABLE}")
        conn.execute(meta_index.INDEX_ALL_SQL)
        if space is not None:
            name = spaces.table(space.id)
            if scalar(conn.execute("SELECT to_regclass(%s)", (name,))) is None:
                spaces.create_table(conn, space.id, space.identity.dimension)
            conn.execute(f"DELETE FROM {name} v WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE "
                         "f.id = v.id AND f.kind IS NULL)")
            missing = conn.execute(
                f"SELECT f.id, f.content FROM facts f WHERE f.kind IS NULL AND NOT EXISTS "
                f"(SELECT 1 FROM {name} v WHERE v.id = f.id)").fetchall()
            if missing and embed is not None:
                report(f"re-embedding {len(missing)} facts with {space.identity.model}")
                vectors = embed([c for _, c in missing])
                for (key, _), vector in zip(missing, vectors):
                    spaces.put_vector(conn, space.id, int(key), vector)
            report("rebuilding the HNSW index")
            conn.execute(f"DROP INDEX IF EXISTS {name}_hnsw")
            spaces.create_index(conn, space.id, space.identity.dimension)
    return verify(store, conn)

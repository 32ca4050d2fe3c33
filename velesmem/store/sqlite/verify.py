"""``velesdb-memory verify``: check a SQLite store's invariants offline, and repair the derived.

Checks: SQLite's own integrity, the schema version, every live user fact has a vector in the
serving space and every vector a user fact, the saved FAISS index holds exactly the serving
space's vectors once replayed, no edge points at a missing fact, the FTS index matches the facts
and the metadata side table matches every fact's metadata. Derived structures (FTS, the side
table, the FAISS file, vectors re-embedded by the serving embedder) are what ``repair`` rebuilds;
a dangling edge or a damaged database is reported, never guessed at.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from velesmem.store.rows import scalar
from velesmem.store.types import Problem, WarmProgress
from velesmem.store.sqlite import meta_index, spaces
from velesmem.store.sqlite.schema import SCHEMA_VERSION
from velesmem.store.sqlite.vector_index import VectorIndex, index_files

if TYPE_CHECKING:
    from velesmem.store.sqlite.backend import SqliteStore

SHOWN = 5  # example ids named per problem


def _ids(rows: list[int]) -> str:
    shown = ", ".join(str(r & 0xFFFFFFFFFFFFFFFF) for r in rows[:SHOWN])
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return shown + more


def verify(store: SqliteStore) -> list[Problem]:
    conn = store.reader()
    problems: list[Problem] = []
    check = [r[0] for r in conn.execute("PRAGMA quick_check")]
    if check != ["ok"]:
        problems.append(Problem("sqlite", "; ".join(check[:SHOWN]), derived=False))
        return problems
    version = int(scalar(conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")))
    if version != SCHEMA_VERSION:
        problems.append(Problem("schema", f"schema version {version}, expected {SCHEMA_VERSION}",
                                derived=False))
        return problems
    problems += _vectors(store, conn)
    problems += _dangling_edges(conn)
    problems += _fts(conn, deep=not store.readonly)
    problems += _meta(conn)
    return problems


def _vectors(store: SqliteStore, conn: sqlite3.Connection) -> list[Problem]:
    space = store.serving
    if space is None:
        sid = spaces.serving_space_id(conn)
        space = None if sid is None else spaces.read_space(conn, sid)
    out: list[Problem] = []
    users = scalar(conn.execute("SELECT count(*) FROM facts WHERE kind IS NULL"))
    if space is None:
        if users:
            out.append(Problem("vectors", f"{users} facts but no serving embedding space",
                               derived=False))
        return out
    missing = [int(r[0]) for r in conn.execute(
        "SELECT f.id FROM facts f WHERE f.kind IS NULL AND NOT EXISTS (SELECT 1 FROM "
        "space_vectors v WHERE v.space = ? AND v.id = f.id)", (space.id,))]
    if missing:
        out.append(Problem("vectors", f"{len(missing)} facts have no vector in the serving space "
                           f"({space.identity.model}): {_ids(missing)}", derived=True))
    orphans = [int(r[0]) for r in conn.execute(
        "SELECT v.id FROM space_vectors v WHERE v.space = ? AND NOT EXISTS (SELECT 1 FROM "
        "facts f WHERE f.id = v.id AND f.kind IS NULL)", (space.id,))]
    if orphans:
        out.append(Problem("vectors", f"{len(orphans)} vectors belong to no fact: "
                           f"{_ids(orphans)}", derived=True))
    index = VectorIndex.load(store.directory, space.identity.dimension, space.identity.model,
                             space.id)
    if index is None:
        if index_files(store.directory, space.id)[0].exists():
            out.append(Problem("faiss", "the saved FAISS index is unreadable or does not match "
                               "its sidecar (it is rebuilt at the next start)", derived=True))
        return out
    if index.watermark > spaces.seq_high(conn):
        out.append(Problem("faiss", "the saved FAISS index is ahead of the store", derived=True))
        return out
    spaces.replay(conn, index, space)
    in_db = np.fromiter((r[0] for r in conn.execute(
        "SELECT id FROM space_vectors WHERE space = ?", (space.id,))), dtype=np.int64)
    live = index.live_ids()
    lacking = np.setdiff1d(in_db, live).tolist()
    extra = np.setdiff1d(live, in_db).tolist()
    if lacking:
        out.append(Problem("faiss", f"{len(lacking)} vectors missing from the FAISS index: "
                           f"{_ids(lacking)}", derived=True))
    if extra:
        out.append(Problem("faiss", f"{len(extra)} FAISS entries with no vector in the store: "
                           f"{_ids(extra)}", derived=True))
    return out


def _dangling_edges(conn: sqlite3.Connection) -> list[Problem]:
    rows = conn.execute(
        "SELECT e.id, e.src, e.dst FROM edges e WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE "
        "f.id = e.src) OR NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = e.dst)").fetchall()
    if not rows:
        return []
    shown = "; ".join(f"{s & 0xFFFFFFFFFFFFFFFF} -> {d & 0xFFFFFFFFFFFFFFFF}"
                      for _, s, d in rows[:SHOWN])
    return [Problem("edges", f"{len(rows)} edges point at a missing fact: {shown}",
                    derived=False)]


def _fts(conn: sqlite3.Connection, *, deep: bool) -> list[Problem]:
    """FTS rows against the facts; ``deep`` also runs FTS5's own integrity check against the
    content (a write statement, so not on a read-only snapshot)."""
    out = []
    if deep:
        try:
            conn.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            out.append(Problem("fts", f"the full-text index does not match the facts ({exc})",
                               derived=True))
    rows = {int(r[0]) for r in conn.execute("SELECT id FROM facts_fts_docsize")}
    users = {int(r[0]) for r in conn.execute("SELECT id FROM facts WHERE kind IS NULL")}
    if rows != users and not out:
        lacking = sorted(users - rows)
        extra = sorted(rows - users)
        out.append(Problem("fts", f"full-text rows differ from the facts: {len(lacking)} "
                           f"missing, {len(extra)} extra ({_ids(lacking or extra)})",
                           derived=True))
    return out


def _meta(conn: sqlite3.Connection) -> list[Problem]:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS verify_meta (key, type, value, id)")
    conn.execute("DELETE FROM temp.verify_meta")
    conn.execute(meta_index.INDEX_ALL_SQL.replace(f"INSERT INTO {meta_index.TABLE}",
                                                  "INSERT INTO temp.verify_meta"))
    diff = conn.execute(
        f"SELECT count(*) FROM (SELECT key, type, value, id FROM temp.verify_meta EXCEPT "
        f"SELECT key, type, value, id FROM {meta_index.TABLE}) UNION ALL SELECT count(*) FROM "
        f"(SELECT key, type, value, id FROM {meta_index.TABLE} EXCEPT SELECT key, type, value, "
        f"id FROM temp.verify_meta)").fetchall()
    conn.execute("DROP TABLE temp.verify_meta")
    lacking, extra = int(diff[0][0]), int(diff[1][0])
    if lacking or extra:
        return [Problem("metadata", f"the metadata index differs from the facts: {lacking} rows "
                        f"missing, {extra} extra", derived=True)]
    return []


def repair(store: SqliteStore, report: Callable[[str], None],
           embed: Callable[[list[str]], np.ndarray] | None) -> list[Problem]:
    """Rebuild every derived structure; return the problems left (those repair cannot fix)."""
    conn = store._write_conn
    space = store.serving
    conn.execute("BEGIN IMMEDIATE")
    try:
        report("rebuilding the full-text index")
        conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
        report("rebuilding the metadata index")
        conn.execute(f"DELETE FROM {meta_index.TABLE}")
        conn.execute(meta_index.INDEX_ALL_SQL)
        if space is not None:
            conn.execute("DELETE FROM space_vectors WHERE space = ? AND id NOT IN (SELECT id FROM "
                         "facts WHERE kind IS NULL)", (space.id,))
            missing = conn.execute(
                "SELECT f.id, f.content, f.seq FROM facts f WHERE f.kind IS NULL AND NOT EXISTS "
                "(SELECT 1 FROM space_vectors v WHERE v.space = ? AND v.id = f.id)",
                (space.id,)).fetchall()
            if missing and embed is not None:
                report(f"re-embedding {len(missing)} facts with {space.identity.model}")
                vectors = embed([c for _, c, _ in missing])
                conn.executemany(
                    "INSERT INTO space_vectors (space, id, seq, vector) VALUES (?, ?, ?, ?)",
                    [(space.id, k, seq, v.astype(np.float32).tobytes())
                     for (k, _, seq), v in zip(missing, vectors)])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if space is not None:
        report("rebuilding the FAISS index")
        for path in index_files(store.directory, space.id):
            path.unlink(missing_ok=True)
        index = spaces.rebuild(conn, space, WarmProgress(), source=store.vector_source(space))
        index.watermark = spaces.seq_high(conn)
        store.index = index
        store.save_index()
    return verify(store)

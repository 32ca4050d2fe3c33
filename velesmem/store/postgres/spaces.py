"""Embedding spaces in PostgreSQL: their records, their vector tables, and vector search.

Each space has its own table ``space_vectors_<id>`` with a ``vector(d)`` column of the space's
dimension (a pgvector HNSW index needs one fixed dimension) and an HNSW index on inner product
(``vector_ip_ops``: vectors are L2-normalised, so inner product is cosine). A row goes with its
fact (``ON DELETE CASCADE``), so no vector outlives its fact and nothing needs replaying: the
index is PostgreSQL's, current at every commit.

Search: unfiltered, one HNSW scan (``ef_search`` raised to ``n`` when more is asked). Filtered by
a set of keys: a small set is scored exactly (primary-key lookups, every distance computed); a
larger one is an HNSW scan with pgvector's iterative scan (``strict_order``) that filters as it
goes, against the filter's own predicate when the keys came from ``matching()`` (a semi-join on
the metadata index) rather than tens of thousands of bound keys. If that scan stops short of ``min(n, len(allowed))`` rows (its tuple budget ran out on a
very selective filter), the exact path answers instead, so a filtered search always returns the
true top-n the index can give, and never fewer than what matches.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import psycopg

from velesmem.errors import EmbedderMismatch
from velesmem.store import rules
from velesmem.store.postgres.connection import EF_SEARCH, Keys
from velesmem.store.postgres.predicates import Matched
from velesmem.store.rows import scalar
from velesmem.store.types import Identity, Space

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
HNSW_MAX_DIMENSION = 2_000  # pgvector indexes vector columns up to 2,000 dimensions
EF_SEARCH_MAX = 1_000  # pgvector's ceiling for hnsw.ef_search
EXACT_FILTER_MAX = 8_192  # filtered sets up to this size are scored exactly (~1 µs a key)
# A filtered HNSW scan widens its candidate list as the filter narrows: ef_search = EF_SEARCH /
# sqrt(selectivity) (100k hash vectors, k = 10, recall@10 against exact ≥ 0.96 at 10 %, 20 %
# and 50 % selectivity; a fixed 100 gives 0.91 at 10 %).
Conn = psycopg.Connection[Any]
log = logging.getLogger(__name__)


def table(space_id: int) -> str:
    return f"space_vectors_{int(space_id)}"


def read_space(conn: Conn, space_id: int) -> Space | None:
    row = conn.execute("SELECT id, model, dimension, witness FROM spaces WHERE id = %s",
                       (space_id,)).fetchone()
    if row is None:
        return None
    return Space(int(row[0]), Identity(row[1], int(row[2])), tuple(row[3] or ()))


def serving_space_id(conn: Conn) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'serving_space'").fetchone()
    return int(row[0]) if row else None


def read_provenance(conn: Conn) -> Identity | None:
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                             "('provenance_model', 'provenance_dimension')").fetchall())
    if "provenance_model" not in rows:
        return None
    return Identity(rows["provenance_model"], int(rows["provenance_dimension"]))


def vector_count(conn: Conn, space_id: int) -> int:
    if scalar(conn.execute("SELECT to_regclass(%s)", (table(space_id),))) is None:
        return 0
    return int(scalar(conn.execute(f"SELECT count(*) FROM {table(space_id)}")))


def create_table(conn: Conn, space_id: int, dimension: int) -> None:
    """The space's vector table and its HNSW index (inside the caller's transaction)."""
    name = table(space_id)
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY REFERENCES facts (id) "
                 f"ON DELETE CASCADE, embedding vector({int(dimension)}) NOT NULL)")
    conn.execute(f"CREATE TRIGGER {name}_guard BEFORE INSERT OR UPDATE ON {name} FOR EACH ROW "
                 f"EXECUTE FUNCTION velesmem_space_guard('{int(space_id)}')")
    create_index(conn, space_id, dimension)


def create_index(conn: Conn, space_id: int, dimension: int) -> None:
    name = table(space_id)
    if dimension > HNSW_MAX_DIMENSION:
        log.warning("space %d has %d dimensions, over pgvector's HNSW limit of %d: its vectors "
                    "are searched exactly", space_id, dimension, HNSW_MAX_DIMENSION)
        return
    conn.execute(f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} USING hnsw "
                 f"(embedding vector_ip_ops) WITH (m = {HNSW_M}, "
                 f"ef_construction = {HNSW_EF_CONSTRUCTION})")


def index_valid(conn: Conn, space_id: int) -> bool | None:
    """Whether the space's HNSW index exists and is valid (None: the space has none by
    design)."""
    row = conn.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = "
                       "to_regclass(%s)", (f"{table(space_id)}_hnsw",)).fetchone()
    if row is None:
        dim = conn.execute("SELECT dimension FROM spaces WHERE id = %s", (space_id,)).fetchone()
        if dim is not None and int(dim[0]) > HNSW_MAX_DIMENSION:
            return None
        return False
    return bool(row[0])


def settle(conn: Conn, identity: Identity, location: str, now: float, lock: int) -> Space:
    """The serving space for ``identity``: created for a new store, replaced while it holds no
    vector, refused when another embedder filled the store. Under ``lock`` (an advisory
    transaction lock), so daemons starting together agree on one space."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        sid = serving_space_id(conn)
        space = None if sid is None else read_space(conn, sid)
        if space is not None and space.identity == identity:
            return space
        recorded = read_provenance(conn)
        if space is not None and (recorded is not None or vector_count(conn, space.id)):
            filled = recorded or space.identity
            raise EmbedderMismatch(
                f"store {location} was filled by embedder {filled.model!r} ({filled.dimension} "
                f"dims) but the configured embedder is {identity.model!r} "
                f"({identity.dimension} dims): set VELESDB_MEMORY_EMBEDDER back to the embedder "
                f"that filled it, or migrate the store to the new one with `velesdb-memory "
                f"migrate --to <embedder>` (export it first with `velesdb-memory export "
                f"--output memories.jsonl`)")
        if space is None:
            new_id = int(scalar(conn.execute(
                "INSERT INTO spaces (model, dimension, state, created_at) VALUES "
                "(%s, %s, 'serving', %s) RETURNING id",
                (identity.model, identity.dimension, now))))
            conn.execute("INSERT INTO meta VALUES ('serving_space', %s) ON CONFLICT (key) DO "
                         "UPDATE SET value = excluded.value", (str(new_id),))
        else:  # an empty space of another embedder: take it over with the new dimension
            new_id = space.id
            conn.execute("UPDATE spaces SET model = %s, dimension = %s, witness = '[]' "
                         "WHERE id = %s", (identity.model, identity.dimension, new_id))
            conn.execute(f"DROP TABLE IF EXISTS {table(new_id)}")
        create_table(conn, new_id, identity.dimension)
    return Space(new_id, identity)


def put_vector(conn: Conn, space_id: int, key: int, vector: np.ndarray) -> None:
    conn.execute(f"INSERT INTO {table(space_id)} (id, embedding) VALUES (%s, %b) "
                 "ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding",
                 (key, np.asarray(vector, dtype=np.float32)))


def _rows(rows: list[tuple[Any, ...]]) -> list[tuple[int, float]]:
    return [(int(i), float(s)) for i, s in rows]


def search(conn: Conn, space_id: int, query: np.ndarray, n: int,
           allowed: np.ndarray | None) -> list[tuple[int, float]]:
    """Top ``n`` keys by inner product, best first (see the module docstring)."""
    if n <= 0:
        return []
    q = np.asarray(query, dtype=np.float32)
    name = table(space_id)
    if allowed is not None:
        if not len(allowed):
            return []
        if len(allowed) <= EXACT_FILTER_MAX:
            return exact(conn, space_id, q, n, np.asarray(allowed))
    ef = min(max(n, EF_SEARCH), EF_SEARCH_MAX)
    if allowed is not None:
        selectivity = min(1.0, len(allowed) / max(estimated_rows(conn, space_id), 1))
        ef = min(max(ef, math.ceil(EF_SEARCH / math.sqrt(selectivity))), EF_SEARCH_MAX)
    where, params = _restriction(q, allowed)
    sql = (f"SELECT id, -(embedding <#> %b) AS s FROM {name} {where} "
           "ORDER BY embedding <#> %b LIMIT %s")
    if ef == EF_SEARCH and allowed is None:
        rows = conn.execute(sql, (*params, q, n)).fetchall()
    else:
        with conn.transaction():
            if ef != EF_SEARCH:
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            if allowed is not None:
                # The filter's selectivity is often misjudged (correlated metadata): keep the
                # planner on the ordered HNSW scan rather than a sort of every match.
                conn.execute("SELECT set_config('enable_sort', 'off', true)")
            rows = conn.execute(sql, (*params, q, n)).fetchall()
    got = _rows(rows)
    want = n if allowed is None else min(n, len(allowed))
    if len(got) < want:
        # The scan stopped short (a tiny space, or the iterative scan's tuple budget spent on
        # a selective filter): count what exists before answering exactly.
        total = len(allowed) if allowed is not None else vector_count(conn, space_id)
        if len(got) < min(want, total):
            return exact(conn, space_id, q, n, allowed)
    return got


def estimated_rows(conn: Conn, space_id: int) -> int:
    """The planner's row count of the space's table (its last ANALYZE), else a count."""
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
                       (table(space_id),)).fetchone()
    if row is not None and row[0] is not None and row[0] > 0:
        return int(row[0])
    return vector_count(conn, space_id)


def _restriction(q: np.ndarray, allowed: np.ndarray | None) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause and parameters (after the query vector) restricting a search."""
    if allowed is None:
        return "", (q,)
    compiled = allowed.compiled if isinstance(allowed, Matched) else None
    if compiled is not None and compiled.ids is not None:
        return f"WHERE id IN ({compiled.ids})", (q, *compiled.params)
    return "WHERE id = ANY(%b)", (q, Keys(allowed))


def exact(conn: Conn, space_id: int, q: np.ndarray, n: int,
          allowed: np.ndarray | None) -> list[tuple[int, float]]:
    """Every distance computed (no index order): the true top ``n``, ties by key."""
    where, params = _restriction(q, allowed)
    # Ordering by the negated expression keeps the planner off the HNSW index.
    rows = conn.execute(f"SELECT id, s FROM (SELECT id, -(embedding <#> %b) AS s FROM "
                        f"{table(space_id)} {where}) v ORDER BY s DESC, id LIMIT %s",
                        (*params, n)).fetchall()
    return _rows(rows)


def scored(conn: Conn, space_id: int, query: np.ndarray, keys: list[int],
           now: float) -> dict[int, tuple[float, float]]:
    """(inner product, confidence) of each live user fact among ``keys``: 0.0 with no vector."""
    if not keys:
        return {}
    rows = conn.execute(f"SELECT f.id, -(e.embedding <#> %b), f.confidence FROM facts f "
                        f"LEFT JOIN {table(space_id)} e ON e.id = f.id WHERE f.id = ANY(%b) "
                        f"AND f.kind IS NULL AND {rules.live(rules.POSTGRES, 'f')}",
                        (np.asarray(query, dtype=np.float32), Keys(keys), now)).fetchall()
    return {int(i): (0.0 if s is None else float(s), float(c)) for i, s, c in rows}

"""The metadata side table: one typed ``fact_meta`` row per top-level key of a fact's metadata.

``type`` is the JSON type with ``boolean`` split into ``true`` / ``false`` and ``string`` named
``text`` (the predicate tree's names); a number's value is in ``num`` (numeric: exact, integers
and reals compare as numbers), a string's in ``str`` (``COLLATE "C"``: UTF-8 byte order, which is
code-point order), an array's or object's in ``js`` (jsonb equality). Rows are derived from
``facts.metadata`` by PostgreSQL itself, in the transaction of every write to it.
"""

from __future__ import annotations

from typing import Any

import psycopg

TABLE = "fact_meta"
_ROWS = f"""
    INSERT INTO {TABLE} (id, key, type, num, str, js)
    SELECT f.id, j.key,
           CASE jsonb_typeof(j.value) WHEN 'string' THEN 'text'
                WHEN 'boolean' THEN j.value #>> '{{}}' ELSE jsonb_typeof(j.value) END,
           CASE WHEN jsonb_typeof(j.value) = 'number' THEN (j.value)::numeric END,
           CASE WHEN jsonb_typeof(j.value) = 'string' THEN j.value #>> '{{}}' END,
           CASE WHEN jsonb_typeof(j.value) IN ('array', 'object') THEN j.value END
    FROM facts f, jsonb_each(f.metadata) j"""
INDEX_ALL_SQL = _ROWS
_INDEX_ONE_SQL = _ROWS + " WHERE f.id = %s"


def index_fact(conn: psycopg.Connection[Any], key: int, *, fresh: bool = False) -> None:
    """(Re)derive the rows of fact ``key`` from its stored metadata (inside the caller's
    transaction, after the facts row was written); ``fresh``: it has no rows yet."""
    if not fresh:
        conn.execute(f"DELETE FROM {TABLE} WHERE id = %s", (key,))
    conn.execute(_INDEX_ONE_SQL, (key,))


__all__ = ["INDEX_ALL_SQL", "TABLE", "index_fact"]

"""The metadata side table: one ``(key, type, value, id)`` row per top-level metadata key.

Metadata filters look facts up here (an index range) instead of parsing every fact's JSON.
``type`` is the JSON type with integers and reals merged into ``number`` (so a filter is
type-strict the way ``json_type`` is); ``value`` is the SQL value ``json_extract`` gives for the
key (a number, a string, or canonical JSON text for arrays and objects; 0 for null, true and
false, whose type says it all). Rows are derived from ``facts.metadata`` by SQLite's own JSON
parser, in the same transaction as every write to it, so they always agree with the facts.
"""

from __future__ import annotations

import sqlite3

TABLE = "fact_meta"
CREATE_SQL = f"""
    CREATE TABLE {TABLE} (
        key    TEXT NOT NULL,
        type   TEXT NOT NULL,   -- null, true, false, number, text, array, object
        value  NOT NULL,        -- no affinity: numbers stay numbers, text stays text
        id     INTEGER NOT NULL,
        PRIMARY KEY (key, type, value, id)
    ) WITHOUT ROWID;
    CREATE INDEX {TABLE}_by_id ON {TABLE}(id)
"""
_ROWS = (f"INSERT INTO {TABLE} (key, type, value, id) SELECT j.key, "
         "CASE WHEN j.type IN ('integer', 'real') THEN 'number' ELSE j.type END, "
         "CASE WHEN j.type IN ('null', 'true', 'false') THEN 0 ELSE j.value END, f.id "
         "FROM facts f, json_each(f.metadata) j")
INDEX_ALL_SQL = _ROWS
_INDEX_ONE_SQL = _ROWS + " WHERE f.id = ?"


def index_fact(conn: sqlite3.Connection, key: int) -> None:
    """(Re)derive the rows of fact ``key`` from its stored metadata (inside the caller's
    transaction, after the facts row was written)."""
    conn.execute(f"DELETE FROM {TABLE} WHERE id = ?", (key,))
    conn.execute(_INDEX_ONE_SQL, (key,))


def unindex_fact(conn: sqlite3.Connection, key: int) -> None:
    """Drop the rows of fact ``key`` (inside the caller's transaction)."""
    conn.execute(f"DELETE FROM {TABLE} WHERE id = ?", (key,))

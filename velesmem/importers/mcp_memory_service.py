"""mcp-memory-service: its SQLite database (``sqlite_vec.db``), read without its code.

The file is opened read-only with the standard library (it is the other server's file, not
velesmem's store; its sqlite-vec tables are never touched, so the extension is not needed). Each
live row of ``memories`` becomes a fact: its content; its tags, memory type, content hash and
own metadata as metadata; its creation and update times as the fact's times (``_veles_date``
from the first) and as ISO strings in the metadata. A row tombstoned by a delete (``deleted_at``)
is skipped. A versioned update (``parent_id``) becomes a ``supersedes`` edge from the new row
to the one it replaced, and each association of ``memory_graph`` a typed edge. The embeddings
are not read: velesmem embeds the text with its own model.

A file that is not a SQLite database, fails SQLite's integrity check or lacks the ``memories``
table is refused, and so is a row whose values are not what the server writes (named by id).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from velesmem.importers.records import CorruptInput, Fact, Link, Record, Skipped

DB_NAME = "sqlite_vec.db"  # the file name the server uses (MCP_MEMORY_SQLITE_PATH's default)
SUPERSEDES = "supersedes"  # velesmem's own relation for a newer version of a fact
RELATED = "related"  # memory_graph's default relationship_type
REQUIRED = ("content_hash", "content")
OPTIONAL = ("tags", "memory_type", "metadata", "created_at", "updated_at", "created_at_iso",
            "updated_at_iso", "deleted_at", "parent_id", "store", "version")
FETCH = 500  # rows fetched at a time


def _key(content_hash: str) -> str:
    return f"mcp-memory-service:{content_hash}"


def _database(path: Path) -> Path:
    """``path`` itself, or the server's database file inside the folder ``path``."""
    if path.is_dir():
        found = path / DB_NAME
        if not found.is_file():
            raise CorruptInput(str(path), f"holds no {DB_NAME} (mcp-memory-service's database)")
        return found
    return path


def _connect(db: Path) -> sqlite3.Connection:
    """Read-only. With no ``-wal`` file beside it (the server closed it cleanly) the file is
    opened immutable, so SQLite leaves no ``-wal``/``-shm`` file of its own next to it;
    otherwise the write-ahead log is read as SQLite reads it."""
    wal = db.with_name(db.name + "-wal")
    mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    uri = f"file:{urllib.parse.quote(str(db.resolve()))}?{mode}"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise CorruptInput(db.name, f"cannot be opened as SQLite ({exc})") from None
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.Error as exc:
        conn.close()
        raise CorruptInput(db.name, f"is not a readable SQLite database ({exc})") from None
    if problems != ["ok"]:
        conn.close()
        raise CorruptInput(db.name, "fails SQLite's integrity check: " + "; ".join(problems))
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def _time(value: object, iso: object, where: str, name: str) -> float | None:
    """Unix seconds from the REAL column, else from its ISO twin; None when neither is set."""
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise CorruptInput(where, f"{name} is not a time: {value!r}")
        return float(value)
    if iso is None:
        return None
    if not isinstance(iso, str):
        raise CorruptInput(where, f"{name}_iso is not a time: {iso!r}")
    try:
        parsed = _dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        raise CorruptInput(where, f"{name}_iso is not a time: {iso!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.UTC)
    return parsed.timestamp()


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC).isoformat().replace("+00:00", "Z")


def _tags(value: object, where: str) -> list[str]:
    """The server stores tags comma-separated (older versions: a JSON list)."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise CorruptInput(where, f"tags is not text: {value!r}")
    text = value.strip()
    if text.startswith("["):
        try:
            listed = json.loads(text)
        except ValueError:
            listed = None
        if isinstance(listed, list) and all(isinstance(t, str) for t in listed):
            return [t.strip() for t in listed if t.strip()]
    return [t.strip() for t in text.split(",") if t.strip()]


def _metadata(value: object, where: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if not isinstance(value, str):
        raise CorruptInput(where, f"metadata is not JSON text: {value!r}")
    try:
        meta = json.loads(value)
    except ValueError as exc:
        raise CorruptInput(where, f"metadata is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise CorruptInput(where, "metadata is not a JSON object")
    return meta


def _fact(row: dict[str, Any], where: str) -> Fact:
    content_hash, content = row["content_hash"], row["content"]
    if not isinstance(content_hash, str) or not content_hash:
        raise CorruptInput(where, f"content_hash is not text: {content_hash!r}")
    if not isinstance(content, str):
        raise CorruptInput(where, f"content is not text: {content!r}")
    created = _time(row.get("created_at"), row.get("created_at_iso"), where, "created_at")
    updated = _time(row.get("updated_at"), row.get("updated_at_iso"), where, "updated_at")
    meta = _metadata(row.get("metadata"), where)
    extra: dict[str, Any] = {"tags": _tags(row.get("tags"), where),
                             "content_hash": content_hash}
    if row.get("memory_type") is not None:
        extra["memory_type"] = str(row["memory_type"])
    for name, seconds in (("created_at", created), ("updated_at", updated)):
        if seconds is not None:
            extra[name] = _iso(seconds)
    if row.get("store") not in (None, "default"):
        extra["store"] = str(row["store"])
    if row.get("version") not in (None, 1):
        extra["version"] = row["version"]
    # the server's own keys first; a key of its metadata named like one above is kept renamed
    for name in list(meta):
        if name in extra:
            meta[f"source_{name}"] = meta.pop(name)
    return Fact(_key(content_hash), content, where, {**meta, **extra}, created, updated)


def _memories(conn: sqlite3.Connection, db: str) -> Iterator[Record]:
    columns = _columns(conn, "memories")
    if not columns:
        raise CorruptInput(db, "has no memories table: not an mcp-memory-service database")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise CorruptInput(db, f"table memories lacks the column {missing[0]}")
    wanted = ["rowid", *REQUIRED, *(c for c in OPTIONAL if c in columns)]
    cursor = conn.execute(f"SELECT {', '.join(wanted)} FROM memories ORDER BY rowid")
    while rows := cursor.fetchmany(FETCH):
        for values in rows:
            row = dict(zip(wanted, values))
            where = f"{db} table memories row {row['rowid']}"
            if row.get("deleted_at") is not None:
                yield Skipped(where, "deleted in mcp-memory-service (a tombstone row)")
                continue
            fact = _fact(row, where)
            yield fact
            parent = row.get("parent_id")
            if parent:
                if not isinstance(parent, str):
                    raise CorruptInput(where, f"parent_id is not a content hash: {parent!r}")
                yield Link(fact.key, _key(parent), SUPERSEDES, where)


def _associations(conn: sqlite3.Connection, db: str) -> Iterator[Record]:
    columns = _columns(conn, "memory_graph")
    if not {"source_hash", "target_hash"} <= columns:
        return
    kind = "relationship_type" if "relationship_type" in columns else "NULL"
    cursor = conn.execute(
        f"SELECT rowid, source_hash, target_hash, {kind} FROM memory_graph ORDER BY rowid")
    while rows := cursor.fetchmany(FETCH):
        for rowid, src, dst, relation in rows:
            where = f"{db} table memory_graph row {rowid}"
            if not isinstance(src, str) or not isinstance(dst, str):
                raise CorruptInput(where, "source_hash and target_hash must be content hashes")
            label = relation if isinstance(relation, str) and relation.strip() else RELATED
            yield Link(_key(src), _key(dst), label, where)


def read(path: Path) -> Iterator[Record]:
    """The live memories of one mcp-memory-service database, then its versions and
    associations as links (see the module docstring)."""
    db = _database(path)
    conn = _connect(db)
    try:
        try:
            yield from _memories(conn, db.name)
            yield from _associations(conn, db.name)
        except sqlite3.DatabaseError as exc:
            raise CorruptInput(db.name, f"cannot be read ({exc})") from None
    finally:
        conn.close()

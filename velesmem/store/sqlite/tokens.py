"""The bearer-token table of a SQLite store, over a connection of its own.

Tokens are the one table written outside the store's single writer: ``velesdb-memory token``
changes them while a daemon holds the store's lock. Nothing derived (FAISS, caches, the write
sequence) depends on them, so SQLite's own locking is all the coordination they need (WAL: one
writer at a time, each waiting out the other's busy timeout; readers never blocked). The daemon
reads them through a ``SqliteTokens`` of its own too, so every request sees the latest commit:
a token created or revoked from the command line holds from the daemon's next request.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

from velesmem.errors import Internal, InvalidInput, StoreLocked
from velesmem.store.types import TokenRecord

T = TypeVar("T")

TOKENS_VERSION = 7  # the schema migration that added auth_tokens (schema._v7_auth_tokens)
_COLUMNS = "name, digest, created_at, revoked_at"


class SqliteTokens:
    """``TokenStore`` over the store's database file (see the module docstring)."""

    def __init__(self, db_path: Path, directory: Path) -> None:
        from velesmem.store.sqlite.backend import connect

        self._directory = directory
        self._lock = threading.Lock()
        try:
            self._conn: sqlite3.Connection | None = connect(db_path)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: sqlite3.Error) -> Internal:
        from velesmem.store.sqlite.backend import damaged

        return damaged(self._directory, exc)

    def _run(self, write: bool, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise Internal("the token table is closed")
            try:
                if not write:
                    return fn(conn)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    out = fn(conn)
                    conn.execute("COMMIT")
                    return out
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.DatabaseError as exc:
                raise self._damaged(exc) from None

    def put_token(self, name: str, digest: str, now: float) -> TokenRecord:
        def insert(conn: sqlite3.Connection) -> TokenRecord:
            taken = conn.execute("SELECT 1 FROM auth_tokens WHERE name = ? AND revoked_at IS NULL",
                                 (name,)).fetchone()
            if taken:
                raise InvalidInput(f"a live token named {name!r} already exists: revoke it first "
                                   f"(velesdb-memory token revoke --name {name}) or pick another name")
            conn.execute("INSERT INTO auth_tokens (name, digest, created_at) VALUES (?, ?, ?)",
                         (name, digest, now))
            return TokenRecord(name, digest, now)

        return self._run(True, insert)

    def tokens(self) -> list[TokenRecord]:
        rows = self._run(False, lambda conn: conn.execute(
            f"SELECT {_COLUMNS} FROM auth_tokens ORDER BY id").fetchall())
        return [_record(row) for row in rows]

    def revoke_token(self, name: str, now: float) -> TokenRecord | None:
        def revoke(conn: sqlite3.Connection) -> TokenRecord | None:
            row = conn.execute(f"SELECT {_COLUMNS} FROM auth_tokens WHERE name = ? AND "
                               "revoked_at IS NULL", (name,)).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE auth_tokens SET revoked_at = ? WHERE name = ? AND "
                         "revoked_at IS NULL", (now, name))
            return TokenRecord(row[0], row[1], row[2], now)

        return self._run(True, revoke)

    def find_token_by_hash(self, digest: str) -> TokenRecord | None:
        row = self._run(False, lambda conn: conn.execute(
            f"SELECT {_COLUMNS} FROM auth_tokens WHERE digest = ?", (digest,)).fetchone())
        return None if row is None else _record(row)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _record(row: tuple[Any, ...]) -> TokenRecord:
    return TokenRecord(row[0], row[1], float(row[2]), None if row[3] is None else float(row[3]))


def open_tokens(directory: Path, now: float) -> SqliteTokens:
    """The token table of the store in ``directory``, whether or not a daemon serves it. A store
    that does not exist yet, or predates the table, is created or upgraded first (which needs
    the store's lock: refused while an older daemon serves it)."""
    from velesmem.store.sqlite.backend import DB_FILE, SqliteStore, current_version_readonly
    from velesmem.store.sqlite.schema import SCHEMA_VERSION

    directory = Path(directory).expanduser()
    path = directory / DB_FILE
    version = 0
    if path.is_file():
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                version = current_version_readonly(conn)
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            from velesmem.store.sqlite.backend import damaged

            raise damaged(directory, exc) from None
    if version > SCHEMA_VERSION:
        raise Internal(f"store {directory} has schema version {version}, newer than this "
                       f"velesmem understands ({SCHEMA_VERSION}): upgrade velesmem")
    if version < TOKENS_VERSION:
        try:
            SqliteStore.open(directory, None, now).close()  # creates or migrates the store
        except StoreLocked:
            raise Internal(
                f"store {directory} is served by a daemon older than this velesmem (its schema "
                "has no token table yet): restart the daemon with this version, which upgrades "
                "the store, then run the token command again") from None
    return SqliteTokens(path, directory)

"""The SQLite token table's own connection: it creates or upgrades a store that lacks the
table, and refuses, worded, while an older daemon serves such a store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from velesmem.errors import Internal
from velesmem.store.sqlite import schema
from velesmem.store.sqlite.backend import DB_FILE, SqliteStore
from velesmem.store.sqlite.lock import StoreLock
from velesmem.store.sqlite.tokens import TOKENS_VERSION, open_tokens

NOW = 1_780_000_000.0


def _version(directory: Path) -> int:
    conn = sqlite3.connect(directory / DB_FILE)
    try:
        return schema.current_version(conn)
    finally:
        conn.close()


def _old_store(directory: Path) -> None:
    """A store as the velesmem before tokens left it."""
    directory.mkdir()
    conn = sqlite3.connect(directory / DB_FILE, isolation_level=None)
    schema.migrate(conn, NOW, schema.MIGRATIONS[:TOKENS_VERSION - 1])
    conn.close()


def test_a_store_that_does_not_exist_yet_is_created_private_with_its_token(tmp_path: Path) -> None:
    tokens = open_tokens(tmp_path / "store", NOW)
    try:
        tokens.put_token("alice", "a" * 64, NOW)
    finally:
        tokens.close()
    assert (tmp_path / "store" / DB_FILE).stat().st_mode & 0o077 == 0
    store = SqliteStore.open(tmp_path / "store", None, NOW)
    try:
        assert [t.name for t in store.tokens()] == ["alice"]
    finally:
        store.close()


def test_a_store_from_before_tokens_is_upgraded_when_nothing_serves_it(tmp_path: Path) -> None:
    _old_store(tmp_path / "store")
    assert _version(tmp_path / "store") == TOKENS_VERSION - 1
    tokens = open_tokens(tmp_path / "store", NOW)
    try:
        assert tokens.tokens() == []
    finally:
        tokens.close()
    assert _version(tmp_path / "store") == schema.SCHEMA_VERSION


def test_a_store_from_before_tokens_served_by_an_old_daemon_is_refused(tmp_path: Path) -> None:
    _old_store(tmp_path / "store")
    held = StoreLock(tmp_path / "store")
    held.acquire()  # the old daemon
    try:
        with pytest.raises(Internal, match=r"older than this velesmem.*restart the daemon"):
            open_tokens(tmp_path / "store", NOW)
    finally:
        held.release()
    assert _version(tmp_path / "store") == TOKENS_VERSION - 1  # left as it was


def test_a_store_newer_than_this_velesmem_is_refused(tmp_path: Path) -> None:
    tokens = open_tokens(tmp_path / "store", NOW)
    tokens.close()
    conn = sqlite3.connect(tmp_path / "store" / DB_FILE, isolation_level=None)
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'future', 0)",
                 (schema.SCHEMA_VERSION + 1,))
    conn.close()
    with pytest.raises(Internal, match="newer than this velesmem"):
        open_tokens(tmp_path / "store", NOW)

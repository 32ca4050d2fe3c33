"""Regressions found under faults: index watermark fooled by reused numbers, a stealable lock,
world-readable stores, a racing term cache, and tracebacks for a damaged or read-only store."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import velesmem
from velesmem.errors import Internal, StoreLocked
from velesmem.ids import to_i64
from velesmem.memory import MemoryService
from velesmem.store.sqlite import text
from velesmem.store.sqlite.backend import DB_FILE
from velesmem.store.sqlite.lock import LOCK_FILE

FORGET_AND_DIE = """
import os, signal, sys
from velesmem.memory import MemoryService
import velesmem
mem = velesmem.open(sys.argv[1]).memory
action, arg = sys.argv[2], sys.argv[3]
if action == "forget":
    assert mem.forget(int(arg)).found
else:
    print(mem.remember(arg).id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _kill_run(spawn, store: Path, action: str, arg: str) -> str:
    child = spawn(FORGET_AND_DIE, str(store), action, arg)
    out, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err
    return out.strip()


def _index_ids(mem: MemoryService) -> set[int]:
    return {int(i) for i in mem.store.index.live_ids()}


@pytest.mark.integration
def test_an_acknowledged_fact_survives_two_crashes_after_a_forget(tmp_path: Path,
                                                                  spawn) -> None:
    """Remember A and B; clean stop (index saved); forget B, kill -9; remember C (which once
    reused B's sequence number), kill -9; start: C is searchable, B is gone, and a clean
    restart keeps it that way."""
    with velesmem.open(tmp_path).memory as mem:
        a = mem.remember("alpha is the first fact").id
        b = mem.remember("beta is the second fact").id
    _kill_run(spawn, tmp_path, "forget", str(b))
    c = int(_kill_run(spawn, tmp_path, "remember", "gamma arrived after two crashes"))
    for _ in range(2):  # the crash recovery, then a clean restart from the saved index
        with velesmem.open(tmp_path).memory as mem:
            assert _index_ids(mem) == {to_i64(a), to_i64(c)}
            top = mem.recall("gamma arrived after two crashes", k=1).memories
            assert [m.id for m in top] == [c]
            assert b not in [m.id for m in mem.recall("beta second fact").memories]
            assert mem.store.verify() == []


def test_sequence_numbers_are_never_reused_after_a_forget(tmp_path: Path) -> None:
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("one")
        two = mem.remember("two").id
        high = mem.store.seq
        mem.forget(two)
    with velesmem.open(tmp_path).memory as mem:
        assert mem.store.seq >= high + 1  # the forget took a number too
        before = mem.store.seq
        mem.remember("three")
        assert mem.store.seq == before + 1


def test_a_saved_index_that_does_not_match_the_store_is_reconciled(tmp_path: Path) -> None:
    """An index file copied from another state of the store (same watermark, other ids) is
    caught by the live-count check and reconciled."""
    with velesmem.open(tmp_path).memory as mem:
        keep = [mem.remember(f"fact number {i} kept").id for i in range(5)]
    saved = {p.name: p.read_bytes() for p in tmp_path.glob("vectors.*")}
    with velesmem.open(tmp_path).memory as mem:
        extra = mem.remember("a sixth fact the old index lacks").id
    for name, data in saved.items():  # put the older index back
        (tmp_path / name).write_bytes(data)
    with velesmem.open(tmp_path).memory as mem:
        assert _index_ids(mem) == {to_i64(i) for i in [*keep, extra]}


@pytest.mark.integration
def test_deleting_the_lock_file_does_not_let_a_second_daemon_in(tmp_path: Path,
                                                                 spawn) -> None:
    holder = spawn("import sys\nimport velesmem\n"
                   "m = velesmem.open(sys.argv[1]).memory\nprint('ready', flush=True)\n"
                   "sys.stdin.readline()\nm.close()\n", str(tmp_path), stdin=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "ready"
        (tmp_path / LOCK_FILE).unlink()
        with pytest.raises(StoreLocked, match="locked by another process"):
            velesmem.open(tmp_path)
    finally:
        holder.communicate("\n", timeout=30)


@pytest.mark.integration
def test_a_dead_holders_pid_is_reported_stale_and_taken_over(tmp_path: Path, spawn,
                                                             caplog) -> None:
    child = spawn("import os, signal, sys\nimport velesmem\n"
                  "m = velesmem.open(sys.argv[1]).memory\nprint(os.getpid(), flush=True)\n"
                  "os.kill(os.getpid(), signal.SIGKILL)\n", str(tmp_path))
    out, _ = child.communicate(timeout=60)
    dead = int(out.strip())
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(dead)
    with caplog.at_level("INFO", logger="velesmem"), velesmem.open(tmp_path).memory as mem:
        assert mem.store._lock.stale_pid == dead
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    assert any(f"pid {dead}) is gone" in r.getMessage() for r in caplog.records)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_store_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    old = os.umask(0o022)  # a permissive umask, as under a plain shell
    try:
        with velesmem.open(store).memory as mem:
            mem.remember("a private memory")
    finally:
        os.umask(old)
    assert _mode(store) == 0o700
    files = [p for p in store.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {DB_FILE, LOCK_FILE, "vectors.faiss", "vectors.json"}
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_an_existing_world_readable_store_is_tightened_at_open(tmp_path: Path) -> None:
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("written before the fix")
    os.chmod(tmp_path, 0o755)
    for p in tmp_path.iterdir():
        os.chmod(p, 0o644)
    with velesmem.open(tmp_path).memory:
        assert _mode(tmp_path) == 0o700
        assert all(_mode(p) == 0o600 for p in tmp_path.iterdir() if p.is_file())


def test_concurrent_recalls_survive_the_term_cache_being_trimmed(mem: MemoryService,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr(text, "TERM_CACHE_MAX", 3)
    for i in range(60):
        mem.remember(f"word{i} shares common ground with word{i + 1}")
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(150):
                words = " ".join(f"word{int(w)}" for w in rng.integers(0, 60, 4))
                mem.recall(words, k=3)
        except BaseException as exc:  # noqa: BLE001 — the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.integration
def test_a_damaged_database_is_refused_with_advice_not_a_traceback(tmp_path: Path,
                                                                    child_env) -> None:
    with velesmem.open(tmp_path).memory as mem:
        for i in range(200):
            mem.remember(f"fact number {i} padding the pages of the database file")
    db = tmp_path / DB_FILE
    data = bytearray(db.read_bytes())
    data[4096:4096 * 3] = b"\xff" * (4096 * 2)  # clobber pages past the header
    db.write_bytes(bytes(data))
    before = db.read_bytes()
    env = {**child_env, "VELESDB_MEMORY_PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "velesmem", "status"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "is damaged" in done.stderr and "Nothing was changed" in done.stderr
    assert "velesdb-memory verify" in done.stderr
    assert db.read_bytes() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_store_is_refused_with_advice(tmp_path: Path) -> None:
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("written while writable")
    os.chmod(tmp_path / DB_FILE, 0o400)
    with pytest.raises(Internal, match="read-only"):
        velesmem.open(tmp_path)


def test_a_read_only_database_error_is_worded(tmp_path: Path) -> None:
    """The wording for SQLite's real read-only error (root, as in CI, ignores file modes)."""
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("written while writable")
    conn = sqlite3.connect(f"file:{tmp_path / DB_FILE}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    from velesmem.store.sqlite.backend import damaged

    err = damaged(tmp_path, caught.value)
    assert "is read-only" in err.message and "nothing was changed" in err.message
    assert "write access" in err.message and str(tmp_path) in err.message

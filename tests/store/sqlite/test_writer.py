"""The writer's lanes: background work yields to every other write, and still runs."""

from __future__ import annotations

import sqlite3
import threading

from velesmem.runtime import ThreadSpawner
from velesmem.store.sqlite.writer import Outcome, Writer


def _conn(tmp_path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    conn.execute("CREATE TABLE log (n INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT)")
    return conn


def _job(what: str, gate: threading.Event | None = None):  # type: ignore[no-untyped-def]
    def run(conn: sqlite3.Connection) -> Outcome[str]:
        if gate is not None:
            gate.wait(10)
        conn.execute("INSERT INTO log (what) VALUES (?)", (what,))
        return Outcome(what)

    return run


def test_background_jobs_wait_for_every_queued_foreground_job(tmp_path) -> None:
    conn = _conn(tmp_path)
    writer = Writer(conn)
    gate = threading.Event()
    first = writer.submit(_job("first", gate))  # holds the thread while the rest queue up
    writer.start(ThreadSpawner())
    background = writer.submit(_job("background"), background=True)
    rest = [writer.submit(_job(f"fg{i}")) for i in range(5)]
    gate.set()
    assert background.result(10) == "background"
    assert [f.result(10) for f in rest] == [f"fg{i}" for i in range(5)]
    first.result(10)
    order = [w for (w,) in conn.execute("SELECT what FROM log ORDER BY n")]
    assert order.index("background") > max(order.index(f"fg{i}") for i in range(5))
    writer.close()


def test_closing_runs_the_background_jobs_left(tmp_path) -> None:
    conn = _conn(tmp_path)
    writer = Writer(conn)  # never started: close runs the queue itself
    futures = [writer.submit(_job(f"bg{i}"), background=True) for i in range(3)]
    writer.close()
    assert [f.result(1) for f in futures] == ["bg0", "bg1", "bg2"]


class _EndedBeforeClosingLooks(threading.Thread):
    """A writer thread that has already taken the stop and ended by the time ``close`` looks
    at it: the order a loaded machine produces now and then."""

    def is_alive(self) -> bool:
        self.join()
        return False


class _LateSpawner(ThreadSpawner):
    def thread(self, name, target):  # type: ignore[no-untyped-def]
        thread = _EndedBeforeClosingLooks(target=target, name=name, daemon=True)
        thread.start()
        return thread


def test_close_returns_when_the_started_thread_ended_before_close_looked(tmp_path) -> None:
    conn = _conn(tmp_path)
    writer = Writer(conn)
    writer.start(_LateSpawner())
    assert writer.submit(_job("written")).result(10) == "written"
    closer = threading.Thread(target=writer.close, daemon=True)
    closer.start()
    closer.join(60)
    assert not closer.is_alive(), "close waited on an empty queue for a thread that had ended"
    conn.close()

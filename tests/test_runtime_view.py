"""The read-only view (``Runtime.open_view``) behind ``velesdb-memory status`` with no daemon:
it starts no thread, sweeps no TTL and writes nothing, yet answers from the store."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import velesmem
from velesmem.cli import main as cli_main
from velesmem.config import Settings
from velesmem.errors import Internal
from velesmem.runtime import Runtime
from velesmem.store.sqlite.lock import held


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory`` with its size and modification time (ns)."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    """A closed store with two live facts and one whose TTL ran out an hour ago."""
    store = tmp_path / "store"
    an_hour_ago = time.time() - 3600
    with velesmem.open(store, embedder="hash", autograph="off") as runtime:
        runtime.memory.remember("the view reads this fact")
        runtime.memory.remember("and this one")
    with velesmem.open(store, embedder="hash", autograph="off",
                       clock=lambda: an_hour_ago) as runtime:
        runtime.memory.remember("this fact expired long ago", ttl_seconds=60)
    return store


def test_status_without_a_daemon_starts_no_thread_and_writes_nothing(
        filled: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(filled))
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")
    files, threads = _files(filled), {t.ident for t in threading.enumerate()}
    assert cli_main(["status"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory"]["facts"] == 2  # the expired fact is invisible, and not purged:
    assert _files(filled) == files  # not a byte, not a timestamp, not a new file changed
    assert {t.ident for t in threading.enumerate()} == threads
    assert "served_by" not in out and out["embedder"]["model"] == out["provenance"]["model"]


def test_the_view_refuses_to_start_workers(filled: Path) -> None:
    with Runtime.open_view(Settings(path=filled, embedder="hash")) as view:
        with pytest.raises(Internal, match="read-only view"):
            view.start()
        assert view.memory.memory_status().memory["facts"] == 2


def test_status_answers_from_the_view_while_another_process_holds_the_lock(
        filled: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(filled))
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")
    monkeypatch.setenv("VELESDB_MEMORY_HTTP_BIND", "127.0.0.1:1")  # no daemon answers there
    assert not held(filled)
    with velesmem.open(filled, embedder="hash", autograph="off") as runtime:
        assert held(filled)
        runtime.memory.remember("a third fact, committed before status runs")
        assert cli_main(["status"]) == 0
        assert json.loads(capsys.readouterr().out)["memory"]["facts"] == 3
    assert not held(filled)

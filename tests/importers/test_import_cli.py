"""``velesdb-memory import --from SOURCE PATH`` end to end: the real command in a subprocess on a
fresh store, its progress and summary on stderr, a re-run that adds nothing, a corrupt file
refused naming its line, and ``status`` counting the facts per source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.importing import FIXTURES

pytestmark = pytest.mark.integration

SERVER_MEMORY = FIXTURES / "server-memory" / "memory.jsonl"
TIMEOUT_S = 300  # a generous bound for one command on a loaded machine, not a measure


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env.update(HOME=str(tmp_path), VELESDB_MEMORY_EMBEDDER="hash",
               VELESDB_MEMORY_PATH=str(tmp_path / "store"))
    return subprocess.run([sys.executable, "-m", "velesmem", *args], env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)


def test_the_command_imports_summarises_is_idempotent_and_status_counts_per_source(
        tmp_path: Path) -> None:
    first = _run(tmp_path, "import", "--from", "server-memory", str(SERVER_MEMORY))
    assert first.returncode == 0, first.stderr
    assert "import: " in first.stderr and "facts embedded" in first.stderr  # progress
    assert "imported from server-memory: 8 facts, 5 entities and 20 links" in first.stderr
    again = _run(tmp_path, "import", "--from", "server-memory", str(SERVER_MEMORY))
    assert again.returncode == 0, again.stderr
    assert "imported from server-memory: 0 facts, 0 entities and 0 links" in again.stderr
    assert "33 already there" in again.stderr
    claude = _run(tmp_path, "import", "--from", "claude-code", str(FIXTURES / "claude-code"))
    assert claude.returncode == 0, claude.stderr
    assert "skipped project/CLAUDE.md:3: it only imports another file" in claude.stderr
    status = _run(tmp_path, "status")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["memory"]["imported"] == {"claude-code": 17,
                                                               "server-memory": 8}


def test_a_corrupt_file_exits_1_naming_its_line_and_creates_no_store(tmp_path: Path) -> None:
    broken = tmp_path / "memory.jsonl"
    lines = SERVER_MEMORY.read_text(encoding="utf-8").splitlines()
    lines[5] = '{"type":"relation","from":"Alice Martin"}'
    broken.write_text("\n".join(lines), encoding="utf-8")
    run = _run(tmp_path, "import", "--from", "server-memory", str(broken))
    assert run.returncode == 1
    assert "memory.jsonl:6: relation 'to' must be a string" in run.stderr
    assert "nothing was imported" in run.stderr
    assert not (tmp_path / "store").exists()


def test_an_unknown_source_is_refused_by_the_parser(tmp_path: Path) -> None:
    run = _run(tmp_path, "import", "--from", "evernote", str(SERVER_MEMORY))
    assert run.returncode == 2 and "invalid choice: 'evernote'" in run.stderr

"""export: JSON Lines round trip, internal scaffolding, mismatched embedder, lock refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import velesmem
from velesmem.config import Settings
from velesmem.memory.export import export_store
from velesmem.runtime import offline_store

REPO = Path(__file__).resolve().parents[2]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _export(path: Path, out: Path, *, include_internal: bool = False,
            now: float) -> tuple[int, int]:
    with offline_store(Settings(path=path), now=now) as store:
        return export_store(store, out, include_internal=include_internal, now=now)


def test_export_round_trip(tmp_path: Path, clock) -> None:
    src, dst, out = tmp_path / "src", tmp_path / "dst", tmp_path / "m.jsonl"
    # the autograph is off: "sqlite" names a technology hub it would link in the background
    with velesmem.open(src, clock=clock, autograph="off").memory as mem:
        a = mem.remember("decision: use sqlite", metadata={"project": "p", "n": 1.5})
        b = mem.remember("evidence: benchmark", metadata={"_veles_date": 20260101})
        mem.relate(a.id, b.id, "supported_by")
        mem.put_internal(7, "Entity: sqlite", {"_veles_kind": "hub"}, kind="entity_hub")
        mem.relate(a.id, 7, "about")
        original = mem.list_memories().to_dict()
    assert _export(src, out, now=clock.now) == (2, 1)
    lines = read(out)
    assert [line["type"] for line in lines] == ["fact", "fact", "edge"]
    with velesmem.open(dst, clock=clock, autograph="off").memory as mem:
        for line in lines:
            if line["type"] == "fact":
                mem.remember(line["content"], metadata=line["metadata"])
            else:
                mem.relate(line["from_str"], line["to_str"], line["relation"])
        assert mem.list_memories().to_dict() == original
        assert mem.memory_status().memory == {"facts": 2, "edges": 1}
    _export(src, out, include_internal=True, now=clock.now)
    lines = read(out)
    hub = [line for line in lines if line["type"] == "fact" and line["kind"] == "entity_hub"]
    assert hub and hub[0]["metadata"] == {"_veles_kind": "hub"}
    assert sum(line["type"] == "edge" for line in lines) == 2


class Other:
    model, dimension, semantic, inline = "other", 8, True, True

    def embed(self, texts):
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)


@pytest.mark.integration
def test_export_works_on_a_mismatched_store(tmp_path: Path) -> None:
    with velesmem.open(tmp_path / "s", embedder=Other()).memory as mem:
        mem.remember("filled by another embedder")
    out = tmp_path / "m.jsonl"
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(tmp_path / "s"),
           "PYTHONPATH": str(REPO)}
    status = subprocess.run([sys.executable, "-m", "velesmem", "status"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 1 and "filled by embedder 'other'" in status.stderr
    done = subprocess.run([sys.executable, "-m", "velesmem", "export", "--output", str(out)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [line["content"] for line in read(out)] == ["filled by another embedder"]


@pytest.mark.integration
def test_export_works_while_a_daemon_holds_the_store(tmp_path: Path) -> None:
    """Users back up a running daemon: export reads a consistent snapshot of the held store."""
    out = tmp_path / "m.jsonl"
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(tmp_path / "s"), "PYTHONPATH": str(REPO)}
    with velesmem.open(tmp_path / "s").memory as mem:
        a = mem.remember("held by the running service")
        b = mem.remember("written before the backup")
        mem.relate(a.id, b.id, "precedes")
        done = subprocess.run([sys.executable, "-m", "velesmem", "export", "--output", str(out)],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        mem.remember("still writable afterwards")
    lines = read(out)
    assert sorted(line["content"] for line in lines if line["type"] == "fact") == [
        "held by the running service", "written before the backup"]
    assert [line["relation"] for line in lines if line["type"] == "edge"] == ["precedes"]
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)


@pytest.mark.integration
def test_status_command_prints_memory_status(tmp_path: Path) -> None:
    with velesmem.open(tmp_path / "s").memory as mem:
        mem.remember("one fact to count")
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(tmp_path / "s"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "velesmem", "status"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["path"] == str(tmp_path / "s")
    assert out["memory"] == {"facts": 1, "edges": 0} and out["embedder"]["dimension"] == 384


@pytest.mark.integration
@pytest.mark.sqlite_only  # a database cloned with the schema already holds an (empty) store
def test_status_without_a_store_says_so_and_creates_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(tmp_path / "s"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "velesmem", "status"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["path"] == str(tmp_path / "s") and out["exists"] is False
    assert "no store at" in out["message"]
    assert not (tmp_path / "s").exists()

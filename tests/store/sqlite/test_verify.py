"""``velesdb-memory verify``: reports broken invariants; ``--repair`` rebuilds the derived ones."""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import velesmem
from velesmem.ids import to_i64
from velesmem.store.sqlite.backend import DB_FILE
from velesmem.store.sqlite.vector_index import VectorIndex

pytestmark = pytest.mark.integration  # every test here starts a process


def _verify(store: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "velesmem", "verify", "--path", str(store),
                           *extra], env=env, capture_output=True, text=True, timeout=120)


def _filled(store: Path) -> list[int]:
    with velesmem.open(store).memory as mem:
        ids = [mem.remember(f"fact number {i} about the release train").id for i in range(30)]
        for a, b in itertools.pairwise(ids):
            mem.relate(a, b, "precedes")
    return ids


def test_a_healthy_store_passes(tmp_path: Path, child_env) -> None:
    _filled(tmp_path)
    done = _verify(tmp_path, child_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every check passed" in done.stdout


def test_verify_reports_a_removed_index_entry_a_dangling_edge_and_a_missing_vector(
        tmp_path: Path, child_env) -> None:
    ids = _filled(tmp_path)
    lost_from_faiss, lost_vector, lost_fts = ids[3], ids[7], ids[11]
    conn = sqlite3.connect(tmp_path / DB_FILE)
    conn.execute("DELETE FROM space_vectors WHERE id = ?", (to_i64(lost_vector),))
    content = conn.execute("SELECT content FROM facts WHERE id = ?",
                           (to_i64(lost_fts),)).fetchone()[0]
    conn.execute("INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', ?, ?)",
                 (to_i64(lost_fts), content))
    conn.execute("INSERT INTO edges (id, src, dst, relation, created_at) VALUES (1, ?, 424242, "
                 "'points_nowhere', 0)", (to_i64(ids[0]),))
    conn.commit()
    model, = conn.execute("SELECT model FROM spaces WHERE id = 1").fetchone()
    rows = conn.execute("SELECT id, vector FROM space_vectors WHERE id != ?",
                        (to_i64(lost_from_faiss),)).fetchall()
    high = int(conn.execute("SELECT value FROM meta WHERE key = 'seq_high'").fetchone()[0])
    conn.close()
    index = VectorIndex(384)  # a saved index that lacks one entry, claiming to be current
    index.bulk_add(np.asarray([r[0] for r in rows], dtype=np.int64),
                   np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, 384))
    index.watermark = high
    index.save(tmp_path, model)

    done = _verify(tmp_path, child_env)
    assert done.returncode == 1
    out = done.stdout
    assert f"1 vectors missing from the FAISS index: {lost_from_faiss}" in out
    assert "1 facts have no vector in the serving space" in out and str(lost_vector) in out
    assert "1 edges point at a missing fact" in out and f"{ids[0]} -> 424242" in out
    assert "full-text" in out
    assert "--repair" in out

    repaired = _verify(tmp_path, child_env, "--repair")
    assert repaired.returncode == 1  # the dangling edge is not derived: reported, kept
    assert "[left] edges: 1 edges point at a missing fact" in repaired.stdout
    again = _verify(tmp_path, child_env)
    left = [line for line in again.stdout.splitlines() if line.startswith("[")]
    assert len(left) == 1 and left[0].startswith("[PROBLEM] edges: 1 edges point at"), left
    with velesmem.open(tmp_path).memory as mem:
        top = mem.recall("fact number 7 about the release train", k=1).memories
        assert [m.id for m in top] == [lost_vector]
        assert mem.recall("fact number 11 about the release train", k=1).memories[0].id == \
            lost_fts


def test_verify_reads_a_store_a_service_holds(tmp_path: Path, child_env) -> None:
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("held while verified")
        done = _verify(tmp_path, child_env)
        assert done.returncode == 0, done.stdout + done.stderr
        refused = _verify(tmp_path, child_env, "--repair")
        assert refused.returncode == 1 and "locked by another process" in refused.stderr

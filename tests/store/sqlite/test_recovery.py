"""Durability and recovery: kill -9 loses no acknowledged write; the FAISS cache rebuilds."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import velesmem
from velesmem.config import Settings
from velesmem.errors import EmbedderMismatch, Internal
from velesmem.ids import to_i64
from velesmem.store.sqlite import schema
from velesmem.store.sqlite.vector_index import INDEX_FILE, SIDECAR_FILE, VectorIndex

WRITER = """
import sys, threading
import velesmem
mem = velesmem.open(sys.argv[1]).memory
out = threading.Lock()

def ack(line):
    with out:
        sys.stdout.write(line + "\\n")
        sys.stdout.flush()

def work(t):
    prev = None
    for i in range(100000):
        fid = mem.remember(f"child {t} fact {i} about durable writes").id
        ack(f"F {fid}")
        if prev is not None:
            eid = mem.relate(fid, prev, "follows").edge_id
            ack(f"E {eid} {fid} {prev}")
        prev = fid

threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for th in threads:
    th.start()
for th in threads:
    th.join()
"""


@pytest.mark.integration
def test_sigkill_mid_load_loses_no_acknowledged_write(tmp_path: Path, spawn) -> None:
    with velesmem.open(tmp_path).memory as mem:  # a saved index the child's writes go past
        base = mem.remember("written before the child, index saved at close").id
    child = spawn(WRITER, str(tmp_path))
    acked: list[str] = []
    deadline = time.monotonic() + 60
    while len(acked) < 400 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        acked.append(line.strip())
    os.kill(child.pid, signal.SIGKILL)
    rest, err = child.communicate(timeout=30)
    acked += [line for line in rest.splitlines() if line.strip()]
    assert child.returncode == -signal.SIGKILL
    assert len(acked) >= 400, err
    facts = [int(line.split()[1]) for line in acked if line.startswith("F ")]
    edges = [tuple(int(x) for x in line.split()[1:]) for line in acked if line.startswith("E ")]
    with velesmem.open(tmp_path).memory as mem:
        conn = mem.store.reader()
        stored = {r[0] for r in conn.execute("SELECT id FROM facts")}
        assert {to_i64(f) for f in facts} <= stored
        stored_edges = {r[0] for r in conn.execute("SELECT id FROM edges")}
        assert {to_i64(e[0]) for e in edges} <= stored_edges
        # the index replayed what the saved file lacked: every fact is findable by vector
        assert mem.store.index.live_count == len(stored)
        last = facts[-1]
        text = conn.execute("SELECT content FROM facts WHERE id = ?", (to_i64(last),)).fetchone()
        assert mem.recall(text[0], k=1).memories[0].id == last
        assert base in {m.id for m in mem.recall("written before the child", k=3).memories}


def _fill(path: Path, n: int = 50) -> list[int]:
    with velesmem.open(path).memory as mem:
        return [mem.remember(f"fact {i} on topic {i % 7}").id for i in range(n)]


@pytest.mark.parametrize("damage", ["missing", "corrupt", "truncated", "sidecar"])
def test_missing_or_corrupt_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    ids = _fill(tmp_path)
    index = tmp_path / INDEX_FILE
    if damage == "missing":
        index.unlink()
    elif damage == "corrupt":
        index.write_bytes(b"\x00garbage" * 1000)
    elif damage == "truncated":
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    else:
        (tmp_path / SIDECAR_FILE).write_text("{not json", encoding="utf-8")
    with velesmem.open(tmp_path).memory as mem:
        assert mem.store.index.live_count == len(ids)
        assert mem.recall("fact 3 on topic 3", k=1).memories[0].id == ids[3]


def _old_index(version: int) -> Any:
    """An empty index of an older file format: 1 IndexIDMap2(IndexHNSWFlat), 2 float16 HNSW."""
    import faiss

    if version == 1:
        return faiss.IndexIDMap2(faiss.IndexHNSWFlat(384, 32, faiss.METRIC_INNER_PRODUCT))
    return faiss.IndexIDMap(faiss.IndexHNSWSQ(384, faiss.ScalarQuantizer.QT_fp16, 32,
                                              faiss.METRIC_INNER_PRODUCT))


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_format_index_file_is_rebuilt_from_the_stored_vectors(
        tmp_path: Path, version: int) -> None:
    """A store saved by a velesmem whose index was float32 HNSW (format 1) or float16 HNSW
    (format 2) opens with every fact searchable, ranked as before, and is saved in 8 bits."""
    import hashlib
    import json

    import faiss

    ids = _fill(tmp_path)
    with velesmem.open(tmp_path).memory as mem:
        want = [(m.id, m.score) for m in mem.recall("fact 3 on topic 3", k=10).memories]
    conn = sqlite3.connect(tmp_path / "memory.sqlite3")
    rows = conn.execute("SELECT id, vector FROM space_vectors WHERE space = 1").fetchall()
    conn.close()
    old = _old_index(version)
    old.add_with_ids(np.vstack([np.frombuffer(v, np.float32) for _, v in rows]),
                     np.asarray([i for i, _ in rows], dtype=np.int64))
    faiss.write_index(old, str(tmp_path / INDEX_FILE))
    side = json.loads((tmp_path / SIDECAR_FILE).read_text(encoding="utf-8"))
    side = {k: v for k, v in side.items() if k not in ("max_abs", "max_norm")}
    side |= {"format": version, "ntotal": len(rows),
             "sha256": hashlib.sha256((tmp_path / INDEX_FILE).read_bytes()).hexdigest()}
    (tmp_path / SIDECAR_FILE).write_text(json.dumps(side), encoding="utf-8")
    with velesmem.open(tmp_path).memory as mem:
        inner = faiss.downcast_index(mem.store.index._index.index)
        assert isinstance(inner, faiss.IndexHNSWSQ)  # rebuilt, not read
        assert faiss.downcast_index(inner.storage).sq.qtype == faiss.ScalarQuantizer.QT_8bit_uniform
        assert mem.store.index.live_count == len(ids)
        assert [(m.id, m.score) for m in mem.recall("fact 3 on topic 3", k=10).memories] == want
    saved = json.loads((tmp_path / SIDECAR_FILE).read_text(encoding="utf-8"))
    assert saved["format"] == 3
    assert VectorIndex.load(tmp_path, 384, saved["model"]) is not None  # read as it is
    with velesmem.open(tmp_path).memory as mem:
        assert mem.store.index.live_count == len(ids)
        assert [(m.id, m.score) for m in mem.recall("fact 3 on topic 3", k=10).memories] == want


def test_forgotten_facts_are_tombstoned_after_reopen(tmp_path: Path) -> None:
    ids = _fill(tmp_path)
    with velesmem.open(tmp_path).memory as mem:
        mem.forget(ids[3])
    # the saved index still holds the vector; the reopen diff must hide it
    with velesmem.open(tmp_path).memory as mem:
        assert ids[3] not in {m.id for m in mem.recall("fact 3 on topic 3", k=50).memories}
        assert mem.store.index.live_count == len(ids) - 1


class OtherEmbedder:
    model = "other-model"
    dimension = 384
    semantic = True
    inline = True

    def embed(self, texts):
        out = np.ones((len(texts), self.dimension), dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_provenance_mismatch_is_refused_and_releases_the_lock(tmp_path: Path) -> None:
    _fill(tmp_path, 3)
    with pytest.raises(EmbedderMismatch) as err:
        velesmem.open(tmp_path, embedder=OtherEmbedder())
    msg = err.value.message
    assert "other-model" in msg and "velesmem-hash-words-v1" in msg and "export" in msg
    settings = Settings.from_env({}).with_overrides(embedder="hash")
    with velesmem.open(tmp_path, settings=settings).memory as mem:  # lock was released
        assert mem.memory_status().memory["facts"] == 3


def test_an_empty_store_records_provenance_with_its_first_fact(tmp_path: Path) -> None:
    with velesmem.open(tmp_path, embedder=OtherEmbedder()).memory as mem:
        assert mem.memory_status().provenance["recorded"] is False
        mem.remember("first")
        assert mem.memory_status().provenance == {"recorded": True, "model": "other-model",
                                                  "dimension": 384}


def test_migrations_apply_once_with_their_record(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    assert schema.migrate(conn, 1.0) == schema.SCHEMA_VERSION

    def add_column(c: sqlite3.Connection) -> None:
        c.execute("ALTER TABLE facts ADD COLUMN extra TEXT")

    def broken(c: sqlite3.Connection) -> None:
        c.execute("ALTER TABLE facts ADD COLUMN half TEXT")
        raise RuntimeError("boom")

    nxt = schema.SCHEMA_VERSION + 1
    with pytest.raises(RuntimeError):
        schema.migrate(conn, 2.0, (*schema.MIGRATIONS, schema.Migration(nxt, "broken", broken)))
    cols = [r[1] for r in conn.execute("PRAGMA table_info(facts)")]
    assert "half" not in cols and schema.current_version(conn) == schema.SCHEMA_VERSION
    more = (*schema.MIGRATIONS, schema.Migration(nxt, "extra column", add_column))
    assert schema.migrate(conn, 3.0, more) == nxt
    assert schema.migrate(conn, 4.0, more) == nxt  # applied once
    assert conn.execute("SELECT name FROM schema_migrations WHERE version = ?",
                        (nxt,)).fetchone() == ("extra column",)
    with pytest.raises(Internal, match="newer than this velesmem"):
        schema.migrate(conn, 5.0)
    conn.close()


def test_migration_2_moves_vectors_out_of_facts(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "memory.sqlite3", isolation_level=None)
    schema.migrate(conn, 1.0, schema.MIGRATIONS[:1])  # a store as version 1 left it
    vec = (np.ones(384) / np.sqrt(384)).astype(np.float32)
    conn.execute("INSERT INTO facts (id, content, metadata, kind, vector, seq, created_at, "
                 "updated_at) VALUES (?, 'old fact', '{}', NULL, ?, 1, 0, 0)",
                 (to_i64(fact_id_of("old fact")), vec.tobytes()))
    conn.execute("INSERT INTO facts_fts (rowid, content) VALUES (?, 'old fact')",
                 (to_i64(fact_id_of("old fact")),))
    conn.close()
    with velesmem.open(tmp_path).memory as mem:  # migrates to the latest version on open
        cols = [r[1] for r in mem.store.reader().execute("PRAGMA table_info(facts)")]
        assert "vector" not in cols
        assert mem.store.reader().execute("SELECT count(*) FROM space_vectors").fetchone()[0] == 1
        assert mem.store.index.live_count == 1
        assert mem.recall("old fact").memories[0].content == "old fact"


def fact_id_of(text: str) -> int:
    from velesmem.ids import fact_id
    return fact_id(text)


def test_an_empty_store_logs_no_index_rebuild(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.INFO, logger="velesmem"):
        with velesmem.open(tmp_path / "empty").memory:
            pass
        with velesmem.open(tmp_path / "one").memory as mem:
            mem.remember("one fact")
        for path in (tmp_path / "one").glob("vectors*"):
            path.unlink()
        with velesmem.open(tmp_path / "one").memory:
            pass
    rebuilt = [r.getMessage() for r in caplog.records if "rebuilt from" in r.getMessage()]
    assert rebuilt == ["FAISS index of space 1 rebuilt from 1 vectors"], rebuilt

"""Online embedding migration, in process: hash → local while the store keeps serving."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support import wait_for
from velesmem.config import Settings
from velesmem.embed.local import LOCAL_MODEL
from velesmem.errors import InvalidInput
from velesmem.ids import fact_id
from velesmem.runtime import Runtime



def open_hash(path: Path, facts: int = 0) -> Runtime:
    rt = Runtime.open(Settings(path=path, embedder="hash", autograph="off"))
    rt.wait_ready_sync(60)
    for i in range(facts):
        rt.memory.remember(f"fact number {i} about the release train")
    return rt


def wait_phase(rt: Runtime, *phases: str, seconds: float = 90.0) -> dict:
    def reached() -> dict | None:
        job = rt.migration.status()["job"]
        return job if job is not None and job["phase"] in phases else None

    return wait_for(reached, seconds, f"the migration job in phase {phases}")


def test_hash_to_local_keeps_serving_and_cuts_over(tmp_path: Path) -> None:
    with open_hash(tmp_path, facts=60) as rt:
        rt.memory.remember("we moved from RabbitMQ to NATS for the event bus")
        assert rt.migration.status() == {"configured": True, "job": None}
        started = rt.migration.start("local", 2000, fact_batch=16)
        job = started["job"]
        assert job["phase"] == "capturing" and job["target"] == {
            "backend": "local", "model": LOCAL_MODEL, "dimension": 384}
        assert job["destination"].endswith("vectors-2.faiss")
        assert rt.memory.recall("release train", k=1).memories  # still serving meanwhile
        done = wait_phase(rt, "committed")
        assert done["progress"]["base_facts"] == 61 and done["progress"]["batches"] == 4
        assert 0 <= done["progress"]["cutover_ms"] <= 2000
        status = rt.memory.memory_status().to_dict()
        assert status["embedder"]["model"] == LOCAL_MODEL and status["embedder"]["semantic"]
        assert status["provenance"] == {"recorded": True, "model": LOCAL_MODEL,
                                        "dimension": 384}
        # meaning now: a paraphrase that shares no content word finds the fact
        top = rt.memory.recall("message broker replacement", k=1).memories
        assert top and top[0].content == "we moved from RabbitMQ to NATS for the event bus"
        assert rt.store.verify() == []
    with Runtime.open(Settings(path=tmp_path, autograph="off")) as again:  # unset: its own
        again.wait_ready_sync(60)
        assert again.embedder.model == LOCAL_MODEL
        assert again.migration.status()["job"]["phase"] == "committed"


def test_every_write_made_during_the_migration_is_there_exactly_once(tmp_path: Path) -> None:
    with open_hash(tmp_path, facts=100) as rt:
        acked: list[int] = []
        forgotten: list[int] = []
        stop = threading.Event()
        lock = threading.Lock()

        def writer(n: int) -> None:  # ~10 writes/s each: what four busy agents send
            i = 0
            while not stop.wait(0.1):
                fid = rt.memory.remember(f"client {n} wrote note {i} during the move").id
                with lock:
                    acked.append(fid)
                if i % 5 == 4:
                    rt.memory.forget(fid)
                    with lock:
                        forgotten.append(fid)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            rt.migration.start("local", 3000, fact_batch=32, replay_batch=64)
            wait_phase(rt, "committed", seconds=180)
        finally:
            stop.set()
            for t in threads:
                t.join()
        live = set(acked) - set(forgotten)
        listed = []
        cursor = None
        while True:
            page = rt.memory.list_memories(cursor=cursor, limit=1000)
            listed += [m.id for m in page.memories]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(listed) == len(set(listed))
        assert live <= set(listed) and not (set(forgotten) & set(listed))
        assert len(listed) == 100 + len(live)
        assert rt.store.space_count(rt.store.serving_space().id) == len(listed)
        assert rt.store.verify() == []


def test_a_full_journal_refuses_the_write_and_loses_nothing_acknowledged(tmp_path: Path,
                                                                         monkeypatch) -> None:
    monkeypatch.setenv("VELESMEM_INTERNAL_MIGRATION_PAUSE", "capturing")  # hold the worker
    with open_hash(tmp_path, facts=5) as rt:
        rt.migration.start("local", 1000, journal_max_bytes=1024)  # 42 entries of 24 bytes
        acked = []
        with pytest.raises(InvalidInput, match="journal is full"):
            for i in range(100):
                acked.append(rt.memory.remember(f"written while capturing {i}").id)
        assert 40 <= len(acked) <= 42
        refused = f"written while capturing {len(acked)}"
        assert rt.memory.list_memories(limit=1000).memories[-1].content != refused
        assert fact_id(refused) not in [m.id for m in rt.memory.list_memories(limit=1000).memories]
        assert rt.migration.cancel()["job"]["cancellation_requested"] is True
        wait_phase(rt, "cancelled")  # the worker observes it at its next step
        rt.memory.remember("after the cancel, writes are not journaled")  # not refused any more
        assert rt.store.building_space() is None
        assert {m.id for m in rt.memory.list_memories(limit=1000).memories} >= set(acked)


def test_cancel_removes_only_what_was_generated(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VELESMEM_INTERNAL_MIGRATION_PAUSE", "base_copied")
    with open_hash(tmp_path, facts=20) as rt:
        rt.migration.start("local", 1000)
        wait_phase(rt, "base_copied")
        space = rt.store.building_space()
        assert space is not None and rt.store.space_count(space.id) == 20
        cancelled = rt.migration.cancel()["job"]
        assert cancelled["cancellation_requested"] is True
        assert wait_phase(rt, "cancelled")["running"] is False
        assert rt.store.building_space() is None and not Path(cancelled["destination"]).exists()
        assert rt.embedder.model.startswith("velesmem-hash")
        assert len(rt.memory.recall("release train", k=50).memories) == 20
        with pytest.raises(InvalidInput, match="no migration is in progress"):
            rt.migration.cancel()


def test_refusals(tmp_path: Path) -> None:
    with open_hash(tmp_path, facts=1) as rt:
        with pytest.raises(InvalidInput, match="already served by"):
            rt.migration.start("hash", 500)
        with pytest.raises(InvalidInput, match="pause_budget_ms"):
            rt.migration.start("local", 0)
        with pytest.raises(InvalidInput, match="fact_batch"):
            rt.migration.start("local", 500, fact_batch=0)
        with pytest.raises(InvalidInput, match="verification_reserve_ms must be below"):
            rt.migration.start("local", 100, verification_reserve_ms=100)
        assert rt.migration.recover() == {"configured": True, "job": None}  # nothing to recover
        assert rt.migration.status()["job"] is None
        rt.migration.start("local", 1000)
        with pytest.raises(InvalidInput, match="already"):
            rt.migration.start("local", 1000)
        wait_phase(rt, "committed")


def test_verify_repair_reembeds_with_the_migrated_spaces_own_embedder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """After hash → local, ``verify --repair`` re-embeds missing vectors with local (the serving
    space's recorded model) although VELESDB_MEMORY_EMBEDDER still names hash."""
    import argparse
    import sqlite3

    import numpy as np

    from velesmem.cli import verify as verify_cli
    from velesmem.embed.local import LocalEmbedder

    with open_hash(tmp_path, facts=12) as rt:
        rt.migration.start("local", 2000, fact_batch=16)
        wait_phase(rt, "committed")
        serving = rt.store.serving_space()
        assert serving is not None and serving.identity.model == LOCAL_MODEL
    conn = sqlite3.connect(tmp_path / "memory.sqlite3")
    with conn:
        lost = conn.execute("DELETE FROM space_vectors WHERE space = ? AND id IN (SELECT id "
                            "FROM facts WHERE kind IS NULL LIMIT 5)", (serving.id,)).rowcount
    conn.close()
    assert lost == 5
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(tmp_path))
    assert verify_cli.run(argparse.Namespace(path=None, repair=True)) == 0
    assert "every check passed" in capsys.readouterr().out
    conn = sqlite3.connect(tmp_path / "memory.sqlite3")
    try:
        rows = conn.execute("SELECT f.content, v.vector FROM facts f JOIN space_vectors v ON "
                            "v.id = f.id AND v.space = ? WHERE f.kind IS NULL",
                            (serving.id,)).fetchall()
    finally:
        conn.close()
    assert len(rows) == 12
    local = LocalEmbedder()
    expected = local.embed([content for content, _ in rows])
    stored = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
    assert (stored * expected).sum(axis=1).min() > 0.999

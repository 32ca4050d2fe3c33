"""TTL expiry across reopen, feedback atomicity, list_memories paging, status, internal facts."""

from __future__ import annotations

import threading

import pytest

import velesmem
from velesmem import limits
from velesmem.config import Settings
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import fact_id
from velesmem.memory import MemoryService


def test_ttl_expires_everywhere_and_survives_a_reopen(store_dir, clock, settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        keep = mem.remember("permanent fact about caching")
        temp = mem.remember("temporary fact about caching", ttl_seconds=60)
        mem.relate(keep.id, temp.id, "r")
        assert len(mem.recall("caching fact").memories) == 2
    clock.advance(61)
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        assert [m.id for m in mem.recall("caching fact").memories] == [keep.id]
        assert [m.id for m in mem.list_memories().memories] == [keep.id]
        assert mem.memory_status().memory == {"facts": 1, "edges": 0}
        assert mem.why("permanent fact about caching").edges == []
        with pytest.raises(NotFound):
            mem.feedback(temp.id, True)
        assert mem.store.reader().execute("SELECT count(*) FROM facts WHERE id = ?", (
            temp.id - (1 << 64) if temp.id >= 1 << 63 else temp.id,)).fetchone()[0] == 0


def test_ttl_expires_while_open(mem: MemoryService, clock) -> None:
    mem.remember("short lived", ttl_seconds=10)
    clock.advance(9)
    assert len(mem.recall("short lived").memories) == 1
    clock.advance(1)
    assert mem.recall("short lived").memories == []


def test_re_remember_without_ttl_makes_it_permanent(mem: MemoryService, clock) -> None:
    mem.remember("short lived", ttl_seconds=10)
    mem.remember("short lived")
    clock.advance(100)
    assert len(mem.recall("short lived").memories) == 1


def test_default_ttl_from_settings(store_dir, clock) -> None:
    settings = Settings.from_env({"VELESDB_MEMORY_DEFAULT_TTL": "30"})
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        mem.remember("defaulted")
        mem.remember("explicit", ttl_seconds=3600)
        clock.advance(31)
        assert [m.content for m in mem.list_memories().memories] == ["explicit"]


def test_feedback_steps_clamps_and_counts(mem: MemoryService) -> None:
    fid = mem.remember("useful fact").id
    assert mem.feedback(fid, True).confidence == pytest.approx(0.6)
    for _ in range(10):
        conf = mem.feedback(str(fid), True).confidence
    assert conf == 1.0
    for _ in range(30):
        conf = mem.feedback(fid, False).confidence
    assert conf == 0.0
    row = mem.store.reader().execute("SELECT successes, failures FROM facts").fetchone()
    assert row == (11, 30)
    assert mem.feedback(fid, True).to_dict() == {"id": fid, "id_str": str(fid),
                                                 "confidence": pytest.approx(0.1)}
    with pytest.raises(NotFound):
        mem.feedback(12345, True)
    with pytest.raises(InvalidInput, match="success must be a boolean"):
        mem.feedback(fid, 1)  # type: ignore[arg-type]


def test_feedback_from_8_threads_loses_no_update(mem: MemoryService) -> None:
    fid = mem.remember("contended fact").id
    per_thread = 25
    barrier = threading.Barrier(8)

    def hammer(success: bool) -> None:
        barrier.wait()
        for _ in range(per_thread):
            mem.feedback(fid, success)

    threads = [threading.Thread(target=hammer, args=(n % 2 == 0,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    row = mem.store.reader().execute("SELECT successes, failures FROM facts").fetchone()
    assert row == (4 * per_thread, 4 * per_thread)


def test_list_memories_pages_in_u64_order(mem: MemoryService) -> None:
    ids = sorted(mem.remember(f"fact number {i}").id for i in range(25))
    assert any(i >= 1 << 63 for i in ids) and any(i < 1 << 63 for i in ids)
    seen, cursor = [], None
    while True:
        page = mem.list_memories(cursor=cursor, limit=7)
        seen += [m.id for m in page.memories]
        if page.next_cursor is None:
            break
        assert page.next_cursor == str(page.memories[-1].id)
        cursor = page.next_cursor
    assert seen == ids
    assert [m.id for m in mem.list_memories(limit=0).memories] == ids[:1]  # clamped to 1
    assert len(mem.list_memories(limit=5000).memories) == 25  # clamped to 1000
    assert mem.list_memories(cursor=ids[-1]).to_dict() == {"memories": [], "next_cursor": None}
    exact = mem.list_memories(limit=25)
    assert exact.next_cursor is None


def test_list_memories_filter_and_internal(mem: MemoryService) -> None:
    a = mem.remember("tagged", metadata={"project": "x"})
    mem.remember("untagged")
    mem.put_internal(5, "scaffold", {"_veles_kind": "hub", "project": "x"}, kind="hub")
    assert [m.id for m in mem.list_memories(filter={"project": "x"}).memories] == [a.id]
    both = mem.list_memories(filter={"project": "x"}, include_internal=True).memories
    assert [m.id for m in both] == [5, a.id]
    assert both[0].metadata == {"_veles_kind": "hub", "project": "x"}  # verbatim
    with pytest.raises(InvalidInput, match="reserved"):
        mem.list_memories(filter={"_veles_kind": "hub"})
    assert len(mem.list_memories(filter={"_veles_kind": "hub"},
                                 include_internal=True).memories) == 1
    for bad in ({"cursor": "x"}, {"limit": "5"}, {"include_internal": 1}, {"filter": [1]}):
        with pytest.raises(InvalidInput):
            mem.list_memories(**bad)


def test_memory_status(mem: MemoryService) -> None:
    empty = mem.memory_status().to_dict()
    assert empty["provenance"] == {"recorded": False, "model": None, "dimension": None}
    assert empty["extraction"] == {"configured": False, "autograph_active": True,
                                   "autograph_dropped": 0}
    a, b = mem.remember("one"), mem.remember("two")
    mem.relate(a.id, b.id, "r")
    mem.put_internal(9, "scaffold", {}, kind="hub")
    status = mem.memory_status().to_dict()
    assert status["embedder"] == {"model": mem.embedder.model, "dimension": 384,
                                  "semantic": False}
    assert status["provenance"] == {"recorded": True, "model": mem.embedder.model,
                                    "dimension": 384}
    assert status["memory"] == {"facts": 2, "edges": 1}


def test_internal_facts(mem: MemoryService, clock) -> None:
    assert mem.put_internal(1, "first", {"project": "p", "n": 1}, kind="event") == 1
    clock.advance(1)
    mem.put_internal(2, "second", {"project": "p", "n": 2}, kind="event")
    mem.put_internal(3, "other", {"project": "q"}, kind="event")
    mem.put_internal(1, "first v2", {"project": "p", "n": 3}, kind="event")  # upsert
    facts, more = mem.scan_internal("event", where={"project": "p"}, limit=10)
    assert [f.id for f in facts] == [1, 2] and more is False
    assert facts[0].content == "first v2" and facts[0].metadata["n"] == 3
    facts, more = mem.scan_internal("event", limit=2)
    assert len(facts) == 2 and more is True
    got = mem.get_internal(2)
    assert got is not None and (got.kind, got.updated_at) == ("event", clock.now)
    assert mem.recall("first").memories == []
    assert mem.list_memories().memories == []
    assert mem.delete_internal(2) is True and mem.delete_internal(2) is False
    assert mem.forget(3).found and mem.get_internal(3) is None
    user = mem.remember("a user fact")
    with pytest.raises(InvalidInput, match="user fact"):
        mem.put_internal(user.id, "x", {}, kind="event")
    assert mem.get_internal(user.id) is None
    with pytest.raises(InvalidInput):
        mem.scan_internal("event", limit=0)
    assert fact_id("a user fact") == user.id
    assert limits.MAX_INTERNAL_BYTES > limits.MAX_FACT_BYTES


def test_concurrent_remembers_are_all_acknowledged_and_visible(mem: MemoryService) -> None:
    barrier = threading.Barrier(8)
    acked: list[int] = []
    lock = threading.Lock()

    def write(t: int) -> None:
        barrier.wait()
        for i in range(40):
            fid = mem.remember(f"writer {t} note {i}", metadata={"t": t}).id
            with lock:
                acked.append(fid)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(set(acked)) == 320
    assert mem.memory_status().memory["facts"] == 320
    got = mem.recall("writer 5 note 39", k=1, filter={"t": 5}).memories
    assert got[0].content == "writer 5 note 39"


@pytest.mark.parametrize("hnsw", [False, True], ids=["exact", "hnsw-rebuilds"])
def test_concurrent_reads_writes_and_forgets_stay_consistent(mem: MemoryService, hnsw: bool,
                                                              monkeypatch) -> None:
    if hnsw:  # force the HNSW path, chunked indexing and tombstone rebuilds under load
        from velesmem.store.sqlite import vector_index
        monkeypatch.setattr(vector_index, "EXACT_SCAN_MAX", 0)
        monkeypatch.setattr(vector_index, "PENDING_CHUNK", 4)
        monkeypatch.setattr(vector_index, "REBUILD_MIN_TOMBSTONES", 8)
    errors: list[BaseException] = []
    written: list[int] = []
    lock = threading.Lock()

    def guard(fn, *args) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 — surfaced below
            errors.append(exc)

    def writer(t: int) -> None:
        for i in range(60):
            fid = mem.remember(f"stress {t} item {i} cache lock disk").id
            with lock:
                written.append(fid)
            if i % 3 == 0:
                mem.forget(fid)

    def reader() -> None:
        for _ in range(60):
            got = mem.recall("cache lock disk", k=20).memories
            assert all(m.content.startswith("stress") for m in got)
            mem.recall_fused("stress cache", k=5)
            mem.list_memories(limit=10)

    threads = [threading.Thread(target=guard, args=(writer, t)) for t in range(4)]
    threads += [threading.Thread(target=guard, args=(reader,)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    facts = mem.memory_status().memory["facts"]
    assert facts == 4 * 40
    assert mem.store.index.live_count == facts
    found = len(mem.recall("cache lock disk", k=1000).memories)
    assert found == facts if not hnsw else found >= 0.9 * facts  # HNSW is approximate

"""Source and event TTLs are real expiries in the store: past them the rows are purged, not kept
behind a metadata flag. Checked through a real MemoryService (SQLite + FAISS) and its clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from context_helpers import Clock, request

import velesmem
from velesmem.config import Settings
from velesmem.context.ingest import IngestRoots
from velesmem.context.service import ContextService
from velesmem.context.store import KIND_EVENT, KIND_SOURCE, InMemoryContextStore, MemoryContextStore
from velesmem.errors import InvalidInput, NotFound
from velesmem.memory.service import MemoryService

TTL = 60
TEN_YEARS = 10 * 366 * 24 * 3600


def stored_rows(memory: MemoryService, kind: str) -> int:
    """Rows of ``kind`` physically in the SQLite file, expired or not."""
    return memory.store.reader().execute("SELECT count(*) FROM facts WHERE kind = ?", (kind,)).fetchone()[0]


def compile_with_ttls(service: ContextService, text: str, **policy: object) -> str:
    out = service.compile_context(request([text], project="p", policy=policy))
    return out["sources"][0]["handle"]


@pytest.fixture
def service(memory) -> ContextService:
    return ContextService(MemoryContextStore(memory), IngestRoots(), memory)


def test_source_ttl_expires_stored_sources(service, memory, clock) -> None:
    handle = compile_with_ttls(service, "per-turn log line", source_ttl_seconds=TTL, event_ttl_seconds=TTL)
    assert stored_rows(memory, KIND_SOURCE) == 1 and stored_rows(memory, KIND_EVENT) == 1
    assert len(memory.list_memories(include_internal=True).memories) == 2
    clock.now += TTL - 1
    assert service.retrieve(handle)["content"] == "per-turn log line"
    assert service.savings("p")["events"] == 1

    clock.now += 2
    with pytest.raises(NotFound, match="expired"):
        service.retrieve(handle)
    assert service.savings("p")["events"] == 0
    assert memory.list_memories(include_internal=True).memories == []
    assert memory.purge_expired() == 2  # what the Runtime's sweeper does in the background
    assert stored_rows(memory, KIND_SOURCE) == 0 and stored_rows(memory, KIND_EVENT) == 0


def test_source_and_event_ttls_are_durable_across_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    settings = Settings.from_env().with_overrides(path=tmp_path / "store")
    with velesmem.open(settings.path, settings=settings, clock=clock).memory as memory:
        service = ContextService(MemoryContextStore(memory), IngestRoots(), memory)
        handle = compile_with_ttls(service, "volatile", source_ttl_seconds=TTL, event_ttl_seconds=TTL)
        compile_with_ttls(service, "kept for audits")  # no TTL: permanent
    clock.now += TTL + 1
    with velesmem.open(settings.path, settings=settings, clock=clock).memory as memory:
        assert stored_rows(memory, KIND_SOURCE) == 1  # purged at open, the permanent one kept
        assert stored_rows(memory, KIND_EVENT) == 1
        service = ContextService(MemoryContextStore(memory), IngestRoots(), memory)
        with pytest.raises(NotFound):
            service.retrieve(handle)
        assert service.savings("p")["events"] == 1


def test_sources_without_a_ttl_are_permanent(service, memory, clock) -> None:
    handle = compile_with_ttls(service, "audit evidence")
    clock.now += TEN_YEARS
    assert service.retrieve(handle)["content"] == "audit evidence"
    assert service.savings("p")["events"] == 1


@pytest.mark.parametrize("make_store", ["memory", "in_memory"])
def test_a_short_ttl_never_cuts_short_a_longer_lived_source(make_store, memory, clock) -> None:
    store = MemoryContextStore(memory) if make_store == "memory" else InMemoryContextStore(clock)
    service = ContextService(store, IngestRoots(), memory)
    permanent = compile_with_ttls(service, "shared evidence")
    compile_with_ttls(service, "shared evidence", source_ttl_seconds=TTL)
    long_lived = compile_with_ttls(service, "long window", source_ttl_seconds=10 * TTL)
    compile_with_ttls(service, "long window", source_ttl_seconds=TTL)
    clock.now += TTL + 1
    assert service.retrieve(permanent)["content"] == "shared evidence"
    assert service.retrieve(long_lived)["content"] == "long window"
    compile_with_ttls(service, "long window", source_ttl_seconds=10 * TTL)  # a later TTL extends it
    clock.now += 10 * TTL - 2
    assert service.retrieve(long_lived)["content"] == "long window"
    clock.now += 2
    with pytest.raises(NotFound):
        service.retrieve(long_lived)
    assert service.retrieve(permanent)["content"] == "shared evidence"


def test_an_out_of_range_ttl_is_refused_before_compiling(service, memory) -> None:
    for bad in (0, -5, 10**30, "soon"):
        with pytest.raises(InvalidInput, match="source_ttl_seconds"):
            service.compile_context(request(["x"], policy={"source_ttl_seconds": bad}))
    assert memory.list_memories(include_internal=True).memories == []


def test_expired_internal_facts_are_invisible_and_purged(memory, clock) -> None:
    memory.put_internal(1, "short", {"k": "v"}, kind="test_kind", ttl_seconds=TTL)
    memory.put_internal(2, "forever", {"k": "v"}, kind="test_kind")
    memory.put_internal(3, "made permanent", {"k": "v"}, kind="test_kind", ttl_seconds=TTL)
    memory.put_internal(3, "made permanent", {"k": "v"}, kind="test_kind")  # an upsert without TTL
    fact = memory.get_internal(1)
    assert fact is not None and fact.expires_at == clock.now + TTL
    clock.now += TTL
    assert memory.get_internal(1) is None
    facts, truncated = memory.scan_internal("test_kind", where={"k": "v"}, limit=10)
    assert sorted(f.id for f in facts) == [2, 3] and truncated is False
    assert stored_rows(memory, "test_kind") == 3  # invisible at once; reads never write
    assert memory.purge_expired() == 1  # the Runtime's sweeper
    assert stored_rows(memory, "test_kind") == 2
    with pytest.raises(InvalidInput, match="ttl_seconds"):
        memory.put_internal(4, "x", {}, kind="test_kind", ttl_seconds=0)
    assert memory.get_internal(4) is None

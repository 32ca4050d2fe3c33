"""The Runtime: lifecycle states, bounded waiting while warming, the TTL sweeper, logging."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time
from pathlib import Path

import pytest

from tests.support import Clock, wait_for
from velesmem import runtime as runtime_module
from velesmem.config import Settings
from velesmem.embed import HashEmbedder
from velesmem.errors import Internal
from velesmem.ids import to_i64
from velesmem.runtime import Runtime, State, configure_logging


class SlowToWarm(HashEmbedder):
    """The hash embedder behind a model load the test releases by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()

    def warm(self) -> None:
        self.started.set()
        self.release.wait(30)


class SlowModel(SlowToWarm):
    """A model loaded in process, slowly, noting when its load starts."""

    inline = False
    loads_in_process = True

    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order = order
        self.release.set()

    def warm(self) -> None:
        self.order.append("warm")
        super().warm()


def test_a_serving_runtime_loads_a_slow_model_once_its_first_call_has_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "WARM_GRACE_S", 60.0)  # only the call can start it
    order: list[str] = []
    embedder = SlowModel(order)
    with Runtime.open(Settings(path=tmp_path, autograph="off"), embedder=embedder, start=False) as rt:
        rt.start(defer_warm=True)
        assert rt.health()["warming"]["phase"].startswith("waiting for the first call")
        fact = asyncio.run(rt.run(lambda: order.append("call") or rt.memory.remember("a first fact").id))
        assert embedder.started.wait(10)
        wait_for(lambda: rt.state is State.READY, what="the runtime to be ready")
        assert order == ["call", "warm"]
        assert rt.memory.recall("first fact", k=1).memories[0].id == fact


def test_a_deferred_model_loads_without_any_call_after_the_grace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "WARM_GRACE_S", 0.05)
    embedder = SlowModel([])
    with Runtime.open(Settings(path=tmp_path, autograph="off"), embedder=embedder, start=False) as rt:
        rt.start(defer_warm=True)
        assert embedder.started.wait(10)
        wait_for(lambda: rt.state is State.READY, what="the runtime to be ready")


def test_states_from_starting_to_closed(tmp_path: Path) -> None:
    embedder = SlowToWarm()
    rt = Runtime.open(Settings(path=tmp_path), embedder=embedder, start=False)
    assert rt.state is State.STARTING and rt.health()["status"] == "starting"
    rt.start()
    assert embedder.started.wait(5)
    health = rt.health()
    assert (rt.state, health["status"], health["warming"]["phase"]) == (
        State.WARMING, "ok", "loading the embedding model")
    assert health["store"] == str(tmp_path.resolve())
    embedder.release.set()
    wait_for(lambda: rt.state is State.READY, what="the runtime to be ready")
    rt.drain()
    assert rt.health()["status"] == "draining"
    rt.close()
    assert rt.state is State.CLOSED


def test_a_warm_that_ends_after_drain_leaves_the_runtime_draining(tmp_path: Path) -> None:
    embedder = SlowToWarm()
    with Runtime.open(Settings(path=tmp_path), embedder=embedder) as rt:
        assert embedder.started.wait(5)
        rt.drain()
        embedder.release.set()
        wait_for(lambda: rt.vectors_loading() is None, what="the warm to end")
        assert rt.state is State.DRAINING and rt.health()["status"] == "draining"


def test_a_write_while_the_model_loads_is_acknowledged_and_embedded_once_it_is_ready(
        tmp_path: Path) -> None:
    embedder = SlowToWarm()
    with Runtime.open(Settings(path=tmp_path, autograph="off"), embedder=embedder) as rt:
        assert embedder.started.wait(5)
        fact = rt.memory.remember("the deploy runbook lives in the team wiki").id
        assert rt.state is State.WARMING and not rt.embedder_ready
        assert [k for k, _ in rt.store.unembedded(None, 10, time.time())] != []  # no vector yet
        loading = rt.memory.recall("deploy runbook")
        assert [m.id for m in loading.memories] == [fact]
        assert loading.warnings and "vector search is still loading" in loading.warnings[0]
        assert rt.memory.why("deploy runbook").nodes[0].id == fact
        assert rt.memory.recall_fused("deploy runbook").to_dict()["warnings"]
        compiled = rt.context.compile_context({"query": "deploy runbook", "fragments": [],
                                               "token_budget": 500, "memory_scope": {}})
        assert "the deploy runbook lives in the team wiki" in compiled["content"]
        assert any("vector search is still loading" in w for w in compiled["warnings"])
        embedder.release.set()
        wait_for(lambda: rt.state is State.READY and not rt.store.unembedded(None, 10, time.time()),
                 what="the backlog to be embedded")
        ready = rt.memory.recall("deploy runbook")
        assert ready.warnings == [] and "warnings" not in ready.to_dict()
        assert ready.memories[0].id == fact and ready.memories[0].score > 0.5  # by its vector
        hits = rt.store.vector_search(embedder.embed(["the deploy runbook lives in the team "
                                                      "wiki"])[0], 1, None)
        assert [k for k, _ in hits] == [to_i64(fact)]


def test_close_does_not_wait_for_a_model_load(tmp_path: Path) -> None:
    class Stuck(SlowToWarm):
        def warm(self) -> None:
            self.started.set()
            self.release.wait(600)

    embedder = Stuck()
    rt = Runtime.open(Settings(path=tmp_path, autograph="off"), embedder=embedder)
    try:
        assert embedder.started.wait(5)
        rt.memory.remember("written while the model loads")
        closer = threading.Thread(target=rt.close)
        closer.start()
        closer.join(60)
        assert not closer.is_alive() and rt.state is State.CLOSED
        assert not embedder.release.is_set()  # closed while the load still ran
    finally:
        embedder.release.set()
    with Runtime.open(Settings(path=tmp_path, autograph="off")) as again:  # nothing was lost
        again.wait_ready_sync(30)
        assert [m.content for m in again.memory.recall("written while the model loads").memories
                ] == ["written while the model loads"]


def test_a_migration_call_waits_for_the_embedder_and_is_told_why_it_failed(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runtime_module, "WARMING_WAIT_S", 0.3)
    monkeypatch.setattr(runtime_module, "WARM_RETRY_S", (0.05,))

    class Broken(SlowToWarm):
        def warm(self) -> None:
            self.started.set()
            if not self.release.is_set():
                raise Internal("the model file is unreadable")

    embedder = Broken()
    with Runtime.open(Settings(path=tmp_path, autograph="off"), embedder=embedder) as rt:
        assert embedder.started.wait(5)
        with pytest.raises(Internal, match="could not load: the model file is unreadable"):
            asyncio.run(rt.ready())
        embedder.release.set()
        asyncio.run(rt.ready())
        assert rt.state is State.READY


def test_the_sweeper_purges_expired_facts_in_the_background(tmp_path: Path) -> None:
    clock = Clock()  # the fact expires when the test says, not when a loaded machine gets there
    with Runtime.open(Settings(path=tmp_path), clock=clock) as rt:
        rt.wait_ready_sync(30)
        rt.memory.remember("short lived", ttl_seconds=1)
        rt.memory.remember("permanent")
        conn = rt.store.reader()
        count = lambda: conn.execute("SELECT count(*) FROM facts").fetchone()[0]  # noqa: E731
        assert count() == 2
        clock.advance(1)
        wait_for(lambda: count() == 1, what="one sweep")
        assert [m.content for m in rt.memory.list_memories().memories] == ["permanent"]


def test_reads_never_write(tmp_path: Path) -> None:
    class Frozen:
        now = 1_780_000_000.0

        def __call__(self) -> float:
            return self.now

    clock = Frozen()
    with Runtime.open(Settings(path=tmp_path, autograph="off"), clock=clock) as rt:
        rt.wait_ready_sync(30)
        rt.memory.remember("expires soon", ttl_seconds=5)
        writes: list[str] = []
        submit = rt.store._submit

        def recording(job):  # type: ignore[no-untyped-def]
            if threading.current_thread() is threading.main_thread():
                writes.append(getattr(job, "__qualname__", "job"))
            return submit(job)

        rt.store._submit = recording  # type: ignore[method-assign]
        clock.now += 10
        assert rt.memory.recall("expires soon").memories == []
        assert rt.memory.list_memories().memories == []
        assert rt.memory.why("expires soon").nodes == []
        rt.memory.memory_status()
        assert writes == []  # the reads wrote nothing (the sweeper purges, in its own thread)


def test_logging_is_one_line_per_record_and_tracebacks_only_at_debug() -> None:
    configure_logging()
    root = logging.getLogger("velesmem")
    handler = next(h for h in root.handlers if h.get_name() == "velesmem-stderr")
    stream = io.StringIO()
    old = handler.setStream(stream)
    try:
        log = logging.getLogger("velesmem.store.sqlite.writer")
        try:
            raise OSError("disk full")
        except OSError:
            log.exception("a store write batch failed to commit (3 calls)")
        first = stream.getvalue()
        assert first == ("[velesdb-memory] a store write batch failed to commit (3 calls) "
                         "(OSError: disk full)\n")
        root.setLevel(logging.DEBUG)
        try:
            raise OSError("disk full")
        except OSError:
            log.exception("again")
        assert "Traceback (most recent call last)" in stream.getvalue()[len(first):]
    finally:
        root.setLevel(logging.INFO)
        handler.setStream(old)


def test_an_internal_tool_error_is_logged_once_with_the_tool_name(tmp_path: Path,
                                                                   caplog) -> None:
    from fastmcp import Client
    from mcp import MCPError

    from velesmem.mcp.app import AppContext
    from velesmem.mcp.server import build_server
    from tests.support.mcp_memory import in_memory

    rt = Runtime.open(Settings(path=tmp_path))
    rt.wait_ready_sync(30)
    server = in_memory(build_server(AppContext(rt)))

    async def call() -> str:
        async with Client(server) as client:
            rt.store.close()  # the store goes away under the server: an internal fault
            with pytest.raises(MCPError) as caught:
                await client.call_tool("list_memories", {})
            return str(caught.value)

    with caplog.at_level(logging.ERROR):
        message = asyncio.run(call())
    rt.close()
    assert "the store is closed" in message
    ours = [r for r in caplog.records if r.name == "velesmem.mcp"]
    assert [r.getMessage() for r in ours] == [
        "tool list_memories failed: the store is closed"]
    assert not [r for r in caplog.records if r.getMessage().startswith("Error calling tool")]

"""Many daemons, one database, one migration: after daemon A commits an online migration, daemon
B serves the new embedding space without a restart — its watcher follows the NOTIFY (or the
poll), and a call that meets the moved space before that follows it and runs once more."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from tests.support import wait_for
from velesmem.config import Settings
from velesmem.embed.local import LOCAL_MODEL
from velesmem.errors import SpaceMoved
from velesmem.ids import fact_id, to_i64
from velesmem.runtime import FOLLOW_ENV, Runtime
from velesmem.store import Identity

from .conftest import key, vector, write

DEADLINE_S = 120.0
MOVED = "we moved from RabbitMQ to NATS for the event bus"


@pytest.fixture
def runtimes(postgres_settings: Settings) -> Iterator[Callable[..., Runtime]]:
    opened: list[Runtime] = []

    def open_one() -> Runtime:
        rt = Runtime.open(postgres_settings.with_overrides(embedder="hash", autograph="off"))
        opened.append(rt)
        rt.wait_ready_sync(60)
        return rt

    yield open_one
    for rt in opened:
        rt.close()


def _migrate(a: Runtime) -> int:
    """A moves the store from hash to local; the new serving space's id."""
    for i in range(12):
        a.memory.remember(f"fact number {i} about the release train")
    a.memory.remember(MOVED)
    a.migration.start("local", 2000, fact_batch=8)
    wait_for(lambda: a.migration.status()["job"]["phase"] == "committed", DEADLINE_S,
             "A's migration to commit")
    space = a.store.serving_space()
    assert space is not None and space.identity.model == LOCAL_MODEL
    return space.id


def _remember(rt: Runtime, fact: str) -> int:
    return asyncio.run(rt.write(rt.memory.submit_remember, fact, offload=True)).id


def _recall(rt: Runtime, query: str) -> list[str]:
    found = asyncio.run(rt.run(lambda: rt.memory.recall(query, k=3)))
    return [m.content for m in found.memories]


def test_a_daemon_follows_a_migration_another_daemon_committed(runtimes) -> None:
    a, b = runtimes(), runtimes()
    before = b.store.serving_space()
    new_space = _migrate(a)
    assert before is not None and before.id != new_space
    wait_for(lambda: b.store.serving_space().id == new_space, DEADLINE_S,
             "B to follow the new space")
    assert b.embedder.model == LOCAL_MODEL and b.memory.embedder.model == LOCAL_MODEL
    got = _remember(b, "the deploy window moved to Tuesday mornings")
    assert _recall(b, "message broker replacement")[0] == MOVED  # meaning: the local model
    # B's write landed in the new space: A finds it by meaning, and every fact has its vector
    assert a.memory.recall("when do we ship to production", k=1).memories[0].id == got
    assert a.store.space_count(new_space) == a.store.counts(a.clock()).facts == 14
    assert a.store.verify() == []


def test_a_call_that_meets_the_moved_space_follows_it_and_runs_once_more(
        runtimes, monkeypatch: pytest.MonkeyPatch) -> None:
    a = runtimes()
    monkeypatch.setenv(FOLLOW_ENV, "off")  # B and C only learn of the move from their calls
    b, c = runtimes(), runtimes()
    new_space = _migrate(a)
    assert b.store.serving_space().id != new_space and b.embedder.model != LOCAL_MODEL
    assert _recall(b, "message broker replacement")[0] == MOVED  # a read retried once
    assert b.store.serving_space().id == new_space and b.embedder.model == LOCAL_MODEL
    assert c.store.serving_space().id != new_space
    got = _remember(c, "the deploy window moved to Tuesday mornings")  # a write retried once
    assert c.store.serving_space().id == new_space
    assert got == fact_id("the deploy window moved to Tuesday mornings")
    assert a.store.space_count(new_space) == a.store.counts(a.clock()).facts == 14
    assert a.store.verify() == []


def test_a_write_into_a_retired_space_is_refused_as_moved_and_writes_nothing(open_pg) -> None:
    migrating, stale = open_pg(), open_pg()
    migrating.remember(write("before the move", seed=1)).result()
    space = migrating.create_space(Identity("moved-to", 8), (), 0.0).result()
    migrating.put_vectors(space.id, [(key("before the move"), vector(2))]).result()
    migrating.activate_space(space.id, ()).result()
    with pytest.raises(SpaceMoved, match="nothing was changed"):
        stale.remember(write("written by the stale daemon")).result()
    assert stale.facts([key("written by the stale daemon")], 0.0) == {}  # nothing half-written
    assert stale.recorded_serving() == migrating.serving_space()
    stale.follow(stale.recorded_serving())
    assert stale.recorded_serving() is None
    stale.remember(write("written by the stale daemon")).result()
    assert to_i64(fact_id("written by the stale daemon")) in migrating.facts(
        [key("written by the stale daemon")], 0.0)

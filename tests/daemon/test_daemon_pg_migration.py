"""Two daemons on one PostgreSQL database: after daemon A commits an online migration (hash →
local), daemon B's next write and recall succeed in the new space, without a restart — whether
B's watcher followed the NOTIFY first, or the call met the moved space and ran once more."""

from __future__ import annotations

import pytest
from daemon_helpers import Daemon, structured

from tests.support import wait_for_async
from velesmem.embed.local import LOCAL_MODEL
from velesmem.runtime import FOLLOW_ENV

pytestmark = pytest.mark.integration

MOVED = "we moved from RabbitMQ to NATS for the event bus"
LATER = "the deploy window moved to Tuesday mornings"
DEADLINE_S = 180.0


def _daemon(make_daemon, url: str, **extra: str) -> Daemon:
    return make_daemon(VELESDB_MEMORY_BACKEND="postgres", VELESDB_MEMORY_DATABASE_URL=url,
                       VELESDB_MEMORY_AUTOGRAPH="off", **extra).start()


async def _embedder(client) -> str:
    return structured(await client.call_tool("memory_status", {}))["embedder"]["model"]


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["watcher", "retry"])
async def test_a_daemon_serves_the_space_another_daemon_migrated_to_without_a_restart(
        make_daemon, postgres_url: str, how: str) -> None:
    a = _daemon(make_daemon, postgres_url)
    b = _daemon(make_daemon, postgres_url, **({FOLLOW_ENV: "off"} if how == "retry" else {}))
    async with a.client() as ca, b.client() as cb:
        for i in range(10):
            await cb.call_tool("remember", {"fact": f"fact number {i} about the build"})
        await ca.call_tool("remember", {"fact": MOVED})
        await ca.call_tool("migration_start", {"target_backend": "local",
                                               "pause_budget_ms": 2000, "fact_batch": 4})

        async def committed() -> bool:
            job = structured(await ca.call_tool("migration_status", {}))["job"]
            return job["phase"] == "committed"

        await wait_for_async(committed, DEADLINE_S, "A's migration to commit")
        if how == "watcher":
            async def followed() -> bool:
                return await _embedder(cb) == LOCAL_MODEL

            await wait_for_async(followed, DEADLINE_S, f"B to follow\n{b.output()}")
        else:
            assert await _embedder(cb) != LOCAL_MODEL  # B knows nothing yet
        written = structured(await cb.call_tool("remember", {"fact": LATER}))
        found = structured(await cb.call_tool("recall", {"query": "message broker replacement",
                                                         "k": 1}))
        assert found["memories"][0]["content"] == MOVED  # by meaning: B embeds with local
        status = structured(await cb.call_tool("memory_status", {}))
        assert status["embedder"]["model"] == LOCAL_MODEL
        assert status["provenance"] == {"recorded": True, "model": LOCAL_MODEL, "dimension": 384}
        # B's write landed in the new space: A finds it by meaning
        seen = structured(await ca.call_tool("recall", {"query": "when do we ship to production",
                                                        "k": 1}))
        assert seen["memories"][0]["id_str"] == written["id_str"]
    assert "relation" not in b.output() and "another daemon moved the store" in b.output()
    assert a.stop() == 0 and b.stop() == 0

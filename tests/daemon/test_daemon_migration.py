"""Online migration through the daemon: a SIGKILL in any phase recovers to one consistent space."""

from __future__ import annotations

import signal

import httpx
import pytest
from daemon_helpers import Daemon, structured, wait_for
from tests.support import wait_for_async

from velesmem.embed.local import LOCAL_MODEL

pytestmark = pytest.mark.integration  # every test here starts a process

PAUSE = "VELESMEM_INTERNAL_MIGRATION_PAUSE"
TARGET = "we moved from RabbitMQ to NATS for the event bus"


def _ready(daemon: Daemon) -> bool:
    try:
        r = httpx.get(f"{daemon.base}/health", verify=daemon.ssl_context(), timeout=2)
    except httpx.HTTPError:
        return False
    return r.status_code == 200 and r.json()["state"] == "ready"


async def _status(client) -> dict:
    return structured(await client.call_tool("migration_status", {}))["job"]


async def _wait_job(client, predicate, seconds: float = 120.0) -> dict:
    async def matched() -> dict | None:
        job = await _status(client)
        return job if job is not None and predicate(job) else None

    return await wait_for_async(matched, seconds, "the migration job's phase", poll_s=0.05)


@pytest.mark.anyio
@pytest.mark.parametrize("phase", ["capturing", "catching_up", "quiescing", "activated"])
async def test_sigkill_in_any_phase_recovers_to_one_consistent_space(make_daemon,
                                                                     phase: str) -> None:
    daemon = make_daemon(**{PAUSE: phase, "VELESDB_MEMORY_AUTOGRAPH": "off"}).start()
    async with daemon.client() as client:
        for i in range(30):
            await client.call_tool("remember", {"fact": f"fact number {i} about the build"})
        await client.call_tool("remember", {"fact": TARGET})
        started = structured(await client.call_tool(
            "migration_start", {"target_backend": "local", "pause_budget_ms": 2000,
                                "fact_batch": 8}))
        assert started["configured"] is True and started["job"]["phase"] == "capturing"
        held = await _wait_job(client, lambda j: j["phase"] == phase)
        assert held["target"]["model"] == LOCAL_MODEL
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait(30)

    restarted = make_daemon(root=daemon.root, port=daemon.port,
                            VELESDB_MEMORY_AUTOGRAPH="off").start()
    wait_for(lambda: _ready(restarted), 120, f"ready after the kill\n{restarted.output()}")
    async with restarted.client() as client:
        job = await _status(client)
        serving = structured(await client.call_tool("memory_status", {}))
        if phase == "activated":  # the flip had committed: the new space serves, job completes
            job = await _wait_job(client, lambda j: j["phase"] == "committed")
            assert "was migrated from it" in restarted.output()
        else:  # before the flip: the old space serves, the job waits for migration_recover
            assert job["running"] is False and "migration_recover" in job["recovery_action"]
            assert job["phase"] == ("cutover_ready" if phase == "quiescing" else phase)
            assert serving["embedder"]["semantic"] is False
            assert serving["provenance"]["model"] == serving["embedder"]["model"]
            resumed = structured(await client.call_tool("migration_recover", {}))
            assert resumed["job"]["running"] is True
            job = await _wait_job(client, lambda j: j["phase"] == "committed")
        status = structured(await client.call_tool("memory_status", {}))
        assert status["embedder"]["model"] == LOCAL_MODEL
        assert status["provenance"] == {"recorded": True, "model": LOCAL_MODEL, "dimension": 384}
        assert status["memory"]["facts"] == 31
        found = structured(await client.call_tool("recall", {"query": "message broker "
                                                             "replacement", "k": 1}))
        assert found["memories"][0]["content"] == TARGET
        listed = structured(await client.call_tool("list_memories", {"limit": 100}))
        assert len({m["id_str"] for m in listed["memories"]}) == 31
    assert restarted.stop() == 0

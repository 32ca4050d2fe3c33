"""Extraction jobs through the daemon, and what a kill -9 in the middle of one leaves."""

from __future__ import annotations

import signal
import sqlite3

import pytest
from daemon_helpers import Daemon, structured
from tests.support import wait_for, wait_for_async

from velesmem.ids import fact_id

pytestmark = pytest.mark.integration  # every test here starts a process

PASSAGE = ("fact: the payments service retries three times | payments\n"
           "fact: a timeout of 8 s protects the checkout | payments, checkout\n"
           "edge: checkout | depends_on | payments")
TEXTS = ["the payments service retries three times", "a timeout of 8 s protects the checkout"]


async def _wait_state(client, request_id: str, states: tuple[str, ...]) -> dict:
    async def reached() -> dict | None:
        status = structured(await client.call_tool("extraction_status",
                                                   {"request_id": request_id}))
        return status if status["state"] in states else None

    return await wait_for_async(reached, what=f"extraction job {request_id} in {states}",
                                poll_s=0.05)


def _job_row(daemon: Daemon, request_id: str) -> tuple:
    conn = sqlite3.connect(daemon.store / "memory.sqlite3")
    try:
        return conn.execute("SELECT state, output IS NOT NULL FROM jobs WHERE id = ?",
                            (request_id,)).fetchone()
    finally:
        conn.close()


def _counts(daemon: Daemon) -> tuple[int, int]:
    conn = sqlite3.connect(daemon.store / "memory.sqlite3")
    try:
        facts = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
        return facts, edges
    finally:
        conn.close()


@pytest.mark.anyio
@pytest.mark.parametrize("point", ["before_output", "after_output"])
async def test_a_job_killed_mid_way_commits_once_after_restart(make_daemon, point: str) -> None:
    daemon = make_daemon(VELESMEM_INTERNAL_EXTRACT_PAUSE=point,
                         VELESDB_MEMORY_AUTOGRAPH="off").start()
    async with daemon.client() as client:
        receipt = structured(await client.call_tool(
            "remember_extracted", {"text": PASSAGE, "extractor": "outline",
                                   "idempotency_key": "crash-1"}))
        assert receipt["state"] == "accepted"
        await _wait_state(client, receipt["request_id"], ("running",))
    request_id = receipt["request_id"]
    wait_for(lambda: _job_row(daemon, request_id) == ("running", point == "after_output"),
             what=f"job {request_id} running (output stored: {point == 'after_output'})")
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait(30)
    assert _counts(daemon) == (0, 0)  # nothing of the job reached the store before the kill

    daemon.env.pop("VELESMEM_INTERNAL_EXTRACT_PAUSE")
    restarted = make_daemon(root=daemon.root, port=daemon.port,
                            VELESDB_MEMORY_AUTOGRAPH="off").start()
    async with restarted.client() as client:
        status = await _wait_state(client, request_id, ("committed", "failed"))
        assert status["state"] == "committed", status
        assert status["ids"] == [fact_id(t) for t in TEXTS]
        again = structured(await client.call_tool(
            "remember_extracted", {"text": PASSAGE, "extractor": "outline",
                                   "idempotency_key": "crash-1"}))
        assert again == {"request_id": request_id, "state": "committed", "reused": True}
        theo = structured(await client.call_tool("entity", {"name": "Checkout"}))
        assert [(r["predicate"], r["target"]) for r in theo["relations"]] == [
            ("depends_on", "payments")]
    facts, edges = _counts(restarted)
    # 2 facts + 2 hubs; about+mentions for 3 topic links, and one hub relation
    assert (facts, edges) == (4, 7)
    assert restarted.stop() == 0

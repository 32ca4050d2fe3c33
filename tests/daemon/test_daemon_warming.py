"""Slow things never block the door: /health and the MCP handshake answer while the daemon
rebuilds a 50k-fact vector index; tools that need the index wait, boundedly, with a worded
"still warming" error."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from daemon_helpers import Daemon, structured, wait_for
from mcp import MCPError

from velesmem.ids import fact_id, to_i64
from velesmem.memory import MemoryService

pytestmark = pytest.mark.integration  # every test here starts a process

FACTS = 50_000
DIM = 384


def _fill_directly(store: Path, n: int) -> None:
    """A store of ``n`` facts written straight into SQLite (fast), with no saved FAISS index."""
    with MemoryService.open(store) as mem:
        mem.remember("the first fact, written the normal way")
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    conn = sqlite3.connect(store / "memory.sqlite3")
    conn.execute("BEGIN")
    rows, seq = [], 1000
    for i in range(n):
        text = f"bulk fact number {i} about warming"
        rows.append((to_i64(fact_id(text)), text, seq + i))
    conn.executemany("INSERT INTO facts (id, content, metadata, kind, seq, created_at, "
                     "updated_at) VALUES (?, ?, '{}', NULL, ?, 0, 0)", rows)
    conn.executemany("INSERT INTO facts_fts (rowid, content) VALUES (?, ?)",
                     [(k, t) for k, t, _ in rows])
    conn.executemany("INSERT INTO space_vectors (space, id, seq, vector) VALUES (1, ?, ?, ?)",
                     [(k, s, v.tobytes()) for (k, _, s), v in zip(rows, vecs)])
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('seq_high', ?)", (str(seq + n),))
    conn.execute("COMMIT")
    conn.close()
    for path in store.glob("vectors*"):
        path.unlink()


def _health(daemon: Daemon) -> tuple[int, dict]:
    r = httpx.get(f"{daemon.base}/health", verify=daemon.ssl_context(), timeout=5)
    return r.status_code, r.json()


@pytest.mark.anyio
async def test_handshake_and_health_answer_while_a_50k_index_rebuilds(make_daemon) -> None:
    daemon = make_daemon()
    daemon.store.mkdir(parents=True)
    _fill_directly(daemon.store, FACTS)
    daemon.start(wait=False)
    wait_for(daemon.healthy, 60, f"/health during warm-up\n{daemon.output()}")
    status, body = _health(daemon)
    assert status == 200 and body["state"] == "warming", body
    assert body["warming"]["phase"] == "rebuilding the vector index"
    assert body["warming"]["total"] == FACTS + 1

    started = time.monotonic()
    async with daemon.client() as client:
        tools = await client.list_tools()
        status_now = structured(await client.call_tool("memory_status", {}))
        handshake_s = time.monotonic() - started
        assert handshake_s < 5.0, handshake_s
        assert len(tools) >= 20
        assert status_now["memory"]["facts"] == FACTS + 1
        assert _health(daemon)[1]["state"] == "warming"  # it really happened during the rebuild

        try:
            result = structured(await client.call_tool("recall", {"query": "bulk fact number 7",
                                                                  "k": 1}))
            assert result["memories"], result  # warming finished within the bound: it answers
        except MCPError as exc:
            assert "still warming" in str(exc) and "rebuilding the vector index" in str(exc)

        wait_for(lambda: _health(daemon)[1]["state"] == "ready", 180,
                 f"warming to finish\n{daemon.output()}", poll_s=0.5)
        hit = structured(await client.call_tool("recall", {"query": "bulk fact number 7 about "
                                                           "warming", "k": 1}))
        assert hit["memories"][0]["content"] == "bulk fact number 7 about warming"
    assert daemon.stop() == 0

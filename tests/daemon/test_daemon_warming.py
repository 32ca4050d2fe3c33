"""Slow things never block the door: /health and the MCP handshake answer while the daemon
rebuilds a 50k-fact vector index or waits for a stalled remote embedder; remember is acknowledged
and recall answers from text search (with a warning) meanwhile, and every fact written then gets
its vector once the embedder answers."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from daemon_helpers import Daemon, structured, wait_for

import velesmem
from tests.embed.embedding_server import EmbeddingServer  # a real Ollama-speaking HTTP server
from tests.support import wait_for_async
from tests.support.bounds import record
from velesmem.ids import fact_id, to_i64

pytestmark = pytest.mark.integration  # every test here starts a process

FACTS = 50_000
DIM = 384


def _fill_directly(store: Path, n: int) -> None:
    """A store of ``n`` facts written straight into SQLite (fast), with no saved FAISS index."""
    with velesmem.open(store).memory as mem:
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
        record("daemon: MCP handshake + memory_status while a 50k index rebuilds",
               time.monotonic() - started, 5.0)
        assert len(tools) >= 20
        assert status_now["memory"]["facts"] == FACTS + 1
        assert _health(daemon)[1]["state"] == "warming"  # it really happened during the rebuild

        # never an error: text search answers while the index rebuilds, and says so
        result = structured(await client.call_tool("recall", {"query": "bulk fact number 7",
                                                              "k": 1}))
        assert result["memories"], result
        if "warnings" in result:
            assert "vector search is still loading" in result["warnings"][0], result

        wait_for(lambda: _health(daemon)[1]["state"] == "ready", 180,
                 f"warming to finish\n{daemon.output()}", poll_s=0.5)
        hit = structured(await client.call_tool("recall", {"query": "bulk fact number 7 about "
                                                           "warming", "k": 1}))
        assert hit["memories"][0]["content"] == "bulk fact number 7 about warming"
    assert daemon.stop() == 0


def _stalled_daemon(make_daemon, server: EmbeddingServer) -> Daemon:
    """A daemon on a new store whose Ollama embedder's probe hangs until the test releases it."""
    server.behaviour.stall = threading.Event()
    return make_daemon(VELESDB_MEMORY_EMBEDDER="ollama", VELESDB_MEMORY_OLLAMA_URL=server.url,
                       VELESDB_MEMORY_OLLAMA_MODEL="stalling-minilm")


@pytest.mark.anyio
async def test_remember_and_recall_while_the_remote_embedder_stalls_then_all_get_vectors(
        make_daemon) -> None:
    facts = ["the release train leaves every second Tuesday",
             "staging deploys need a green canary first",
             "the billing service owns the invoices table"]
    with EmbeddingServer() as server:
        daemon = _stalled_daemon(make_daemon, server).start()
        async with daemon.client() as client:
            answers = await asyncio.gather(
                *(client.call_tool("remember", {"fact": f}) for f in facts),
                client.call_tool("recall", {"query": "release train", "k": 5}))
            ids = [structured(a)["id_str"] for a in answers[:len(facts)]]
            early = structured(answers[-1])
            assert "vector search is still loading" in early["warnings"][0], early
            for fact, fid in zip(facts, ids):  # each written fact is found by its words now
                found = structured(await client.call_tool("recall", {"query": fact, "k": 1}))
                assert [m["id_str"] for m in found["memories"]] == [fid], found
                assert found["warnings"], found
            why = structured(await client.call_tool("why", {"decision": facts[1]}))
            assert why["nodes"][0]["id_str"] == ids[1] and why["warnings"]
            status = structured(await client.call_tool("memory_status", {}))
            assert status["memory"]["facts"] == len(facts)
            assert status["embedder"]["model"] == "ollama:stalling-minilm"
            assert _health(daemon)[1]["state"] == "warming"  # the probe is still hanging
            assert len(server.behaviour.requests) == 1  # nothing waited on the model but it

            server.behaviour.stall.set()
            wait_for(lambda: _health(daemon)[1]["state"] == "ready", 120,
                     f"warming to finish\n{daemon.output()}", poll_s=0.2)

            async def every_fact_found_by_its_vector() -> bool:
                for fact, fid in zip(facts, ids):
                    got = structured(await client.call_tool("recall", {"query": fact, "k": 1}))
                    top = got["memories"][0] if got["memories"] else {}
                    if "warnings" in got or top.get("id_str") != fid or top["score"] < 0.99:
                        return False  # its vector is not there yet (score: the raw cosine)
                return True

            await wait_for_async(every_fact_found_by_its_vector, 120,
                                 f"every fact found by its vector\n{daemon.output()}", 0.2)
        assert daemon.stop() == 0


def test_sigterm_while_the_model_loads_stops_the_daemon(make_daemon) -> None:
    with EmbeddingServer() as server:
        daemon = _stalled_daemon(make_daemon, server).start()
        wait_for(lambda: len(server.behaviour.requests) == 1, 30, "the embedder probe")
        assert _health(daemon)[1]["state"] == "warming"
        assert daemon.stop(signal.SIGTERM) == 0
        assert "stopping while the embedding model still loads" in daemon.output()
        assert not server.behaviour.stall.is_set()

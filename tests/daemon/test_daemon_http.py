"""The HTTPS daemon as clients see it: strict TLS against the local CA, MCP over /mcp, /health,
many concurrent clients on one store, and the Host/Origin and body guards.

One daemon subprocess is shared by this module; nothing here stops or reconfigures it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from mcp import MCPError
from fastmcp.client.transports import StreamableHttpTransport

from daemon_helpers import Daemon, raw_post, structured

from tests.support.bounds import record

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

BURST_CLIENT = Path(__file__).with_name("burst_client.py")
CLIENTS = 16
FACTS_PER_CLIENT = 50


def test_health_answers_ok_without_any_mcp_handshake(shared_daemon: Daemon) -> None:
    r = httpx.get(f"{shared_daemon.base}/health", verify=shared_daemon.ssl_context())
    body = r.json()
    assert r.status_code == 200 and body["status"] == "ok"
    assert body["state"] in ("warming", "ready") and body["version"]
    assert body["store"] == r.headers["x-velesdb-memory-store"]


def test_health_fails_without_the_ca(shared_daemon: Daemon) -> None:
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{shared_daemon.base}/health")  # system trust store only


async def test_mcp_client_fails_tls_verification_without_the_ca(shared_daemon: Daemon) -> None:
    client = Client(StreamableHttpTransport(shared_daemon.url))  # default verification, no CA
    with pytest.raises(Exception) as info:
        async with client:
            await client.list_tools()
    assert "CERTIFICATE_VERIFY_FAILED" in _chain_text(info.value)


def _chain_text(exc: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        parts.append(repr(e))
        stack += [x for x in (e.__cause__, e.__context__) if x is not None]
        stack += list(getattr(e, "exceptions", ()))
    return "\n".join(parts)


async def test_tools_listed_and_remember_recall_round_trip_over_https(shared_daemon: Daemon) -> None:
    async with shared_daemon.client() as client:
        names = {t.name for t in await client.list_tools()}
        assert {"remember", "recall", "recall_fused", "why", "list_memories", "memory_status"} <= names
        saved = structured(await client.call_tool("remember", {"fact": "the daemon speaks HTTPS on loopback"}))
        assert saved["id_str"] == str(saved["id"])
        found = structured(await client.call_tool("recall", {"query": "the daemon speaks HTTPS on loopback", "k": 3}))
        assert found["memories"][0]["id_str"] == saved["id_str"]


async def test_sixteen_clients_at_once_each_remember_and_recall_fifty_facts(shared_daemon: Daemon) -> None:
    async def one_client(n: int) -> dict[str, str]:
        ids: dict[str, str] = {}
        async with shared_daemon.client() as client:
            for i in range(FACTS_PER_CLIENT):
                fact = f"client {n} fact {i}: token{n}x{i} lives in drawer {n * 100 + i}"
                ids[fact] = structured(await client.call_tool("remember", {"fact": fact}))["id_str"]
            for fact, id_str in ids.items():
                hits = structured(await client.call_tool("recall", {"query": fact, "k": 5}))["memories"]
                assert id_str in [h["id_str"] for h in hits], (fact, hits)
        return ids

    results = await asyncio.gather(*(one_client(n) for n in range(CLIENTS)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    expected = {id_str for r in results for id_str in r.values()}  # type: ignore[union-attr]
    assert len(expected) == CLIENTS * FACTS_PER_CLIENT

    stored: set[str] = set()
    async with shared_daemon.client() as client:
        cursor = None
        while True:
            args = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
            page = structured(await client.call_tool("list_memories", args))
            stored |= {m["id_str"] for m in page["memories"]}
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert expected <= stored


def test_health_answers_while_a_slow_tool_call_runs(shared_daemon: Daemon) -> None:
    """Another process fires a burst of wide fused recalls (pool 1000, 10 hops: tens of ms of work
    each, in worker threads) and writes; /health, served on the event loop, keeps answering promptly
    while that burst is still running."""
    latencies: list[float] = []
    answered_during_burst = 0
    with httpx.Client(verify=shared_daemon.ssl_context(), timeout=60) as http:
        http.get(f"{shared_daemon.base}/health")  # TLS handshake done before the burst
        burst = subprocess.Popen([sys.executable, str(BURST_CLIENT), shared_daemon.url, str(shared_daemon.ca)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert burst.stdout is not None
        assert burst.stdout.readline() == b"burst started\n"  # its session is up, its calls going out
        started = time.perf_counter()
        while burst.poll() is None:
            t0 = time.perf_counter()
            r = http.get(f"{shared_daemon.base}/health")
            latencies.append(time.perf_counter() - t0)
            assert r.status_code == 200
            if burst.poll() is None:
                answered_during_burst += 1
        burst_s = time.perf_counter() - started
    out = burst.stdout.read().decode(errors="replace")
    burst.stdout.close()
    assert burst.returncode == 0, out
    assert answered_during_burst >= 3, (answered_during_burst, latencies)
    # Never queued behind the calls: every answer comes back well inside the burst (noted for
    # bench/bounds.py; the answers during the burst are the behaviour checked here).
    record("daemon: slowest /health during a burst of wide recalls", max(latencies), burst_s / 2)


async def test_server_advertises_only_the_tools_it_serves(shared_daemon: Daemon) -> None:
    """No prompts or resources are served, so none are advertised (and asking is "method not found")."""
    async with shared_daemon.client(mode="legacy") as client:
        capabilities = client.initialize_result.capabilities
        assert capabilities.tools is not None
        assert capabilities.prompts is None and capabilities.resources is None
        for ask in (client.list_prompts, client.list_resources, client.list_resource_templates):
            with pytest.raises(MCPError, match="Method not found"):
                await ask()
        assert len(await client.list_tools()) > 0


def test_foreign_host_is_misdirected(shared_daemon: Daemon) -> None:
    ctx = shared_daemon.ssl_context()
    for host in (f"evil.example:{shared_daemon.port}", "127.0.0.1:1", "localhost"):
        r = httpx.post(shared_daemon.url, verify=ctx, headers={"Host": host}, json={})
        assert r.status_code == 421, host
    for host in ("127.0.0.1", "localhost", "[::1]"):
        r = httpx.get(f"{shared_daemon.base}/health", verify=ctx, headers={"Host": f"{host}:{shared_daemon.port}"})
        assert r.status_code == 200, host


def test_foreign_origin_is_forbidden(shared_daemon: Daemon) -> None:
    ctx = shared_daemon.ssl_context()
    for origin in ("https://evil.example", f"http://127.0.0.1:{shared_daemon.port}", "null"):
        r = httpx.post(shared_daemon.url, verify=ctx, headers={"Origin": origin}, json={})
        assert r.status_code == 403, origin
    r = httpx.get(f"{shared_daemon.base}/health", verify=ctx,
                  headers={"Origin": f"https://localhost:{shared_daemon.port}"})
    assert r.status_code == 200


def test_oversized_declared_body_gets_413_before_the_body_is_sent(shared_daemon: Daemon) -> None:
    from velesmem import limits

    cap = limits.DEFAULT_HTTP_MAX_BODY_BYTES
    answer = raw_post(shared_daemon, f"Content-Length: {cap + 1}\r\n", [])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


async def test_a_large_body_within_the_cap_reaches_the_tool(shared_daemon: Daemon) -> None:
    """A 5 MiB request (over the SDK's own 4 MiB default) passes the transport and is refused by
    remember's 2 KiB fact cap, as a JSON-RPC error — not by the body cap."""
    big = "y" * (5 * 1024 * 1024)
    async with shared_daemon.client() as client:
        with pytest.raises(Exception) as info:
            await client.call_tool("remember", {"fact": big})
    text = _chain_text(info.value)
    assert "2048" in text and "413" not in text, text[:500]


def test_startup_lines_print_the_url_and_the_ca_with_the_trust_hint(shared_daemon: Daemon) -> None:
    out = shared_daemon.output()
    assert f"[velesdb-memory] HTTPS server listening on {shared_daemon.url}" in out
    assert f"[velesdb-memory] Local CA: {shared_daemon.ca} — a client only needs to trust this once" in out

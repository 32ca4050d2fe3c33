"""Every compiler tool through a real MCP client: in memory over build_server with a real
MemoryService, and one HTTPS round trip through the real daemon subprocess."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from context_helpers import png_b64
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import MCPError

from tests.support import free_port, wait_for
from velesmem.config import Settings
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from tests.support.mcp_memory import in_memory

pytestmark = pytest.mark.anyio

COMPILER_TOOLS = {"compile_context", "compile_transcript", "explain_compilation", "retrieve_context_source",
                  "context_savings", "suggest_budget", "save_working_context", "load_working_context",
                  "list_working_contexts"}
U64_MAX = 2**64 - 1


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ingest_root(tmp_path: Path) -> Path:
    root = tmp_path / "ingest"
    root.mkdir()
    (root / "notes.md").write_text("Never restart the primary during a rebalance.\n", encoding="utf-8")
    return root


@pytest.fixture
def server(tmp_path: Path, ingest_root: Path) -> Iterator[Any]:
    import velesmem

    settings = Settings.from_env().with_overrides(path=tmp_path / "store", ingest_roots=(str(ingest_root),))
    runtime = velesmem.open(settings.path, settings=settings)
    try:
        yield in_memory(build_server(AppContext(runtime)))
    finally:
        runtime.close()


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result
    return result.structured_content


async def test_all_nine_compiler_tools_are_advertised_with_media_in_the_schemas(server) -> None:
    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert COMPILER_TOOLS <= set(tools)
    frag = tools["compile_context"].input_schema["properties"]["fragments"]
    assert "media" in str(frag)


async def test_every_compiler_tool_round_trips(server, ingest_root: Path) -> None:
    png = png_b64(120, 90)
    request = {"query": "the failing build", "token_budget": 1, "project": "veles",
               "fragments": [{"content": "the failing build, before the fix", "kind": "screenshot",
                              "media": {"mime": "image/png", "bytes_b64": png}},
                             {"path": str(ingest_root / "notes.md")}]}
    async with Client(server) as client:
        out = await call(client, "compile_context", request)
        assert out["content"] == "" and out["risk"] == "high"
        assert out["warnings"][0].startswith("nothing fit token_budget 1: the content is empty")
        media_handle = next(h["handle"] for h in out["retrieval_handles"] if "fragment_id" in h
                            and h["fragment_id"] == out["decisions"][0]["fragment_id"])
        source = await call(client, "retrieve_context_source", {"handle": media_handle})
        assert source["media"]["bytes_b64"] == png and base64.b64decode(source["media"]["bytes_b64"])
        text_handle = out["decisions"][1]["handle"]
        assert (await call(client, "retrieve_context_source", {"handle": text_handle}))["content"] == \
            "Never restart the primary during a rebalance.\n"

        explained = await call(client, "explain_compilation", {"request": request, "fragment_id": "0",
                                                               "fragment_index": "1"})
        assert explained["rule_id"] == "budget.externalize" and explained["risk"] == "high"

        transcript = await call(client, "compile_transcript", {
            "query": "q", "token_budget": 100, "transcript": "System: be brief\nUser: hi\n",
            "project": "veles", "policy": {"ids_as_strings": True}})
        assert transcript["segmentation"]["format_detected"] == "plain"
        assert isinstance(transcript["segmentation"]["segments"][0]["fragment_id"], str)

        savings = await call(client, "context_savings", {"project": "veles"})
        assert savings["events"] == 2 and savings["tokens_saved"] > 0 and savings["truncated"] is False

        assert (await call(client, "suggest_budget", {"target_model": "Claude-Sonnet-4-5"}))["window"] == 200_000
        unknown = await call(client, "suggest_budget", {"target_model": "nope", "reserve_tokens": "10"})
        assert unknown["window"] is None and unknown["suggested_budget"] is None and "2026-07" in unknown["source"]

        saved = await call(client, "save_working_context", {
            "project": "veles", "session": "run-42",
            "working": {"goal": "fix the build",
                        "exact_evidence": [{"text": "crash log", "fragment_id": str(U64_MAX), "memory_id": 2**53 + 1,
                                            "handle": media_handle}],
                        "decisions": ["roll back first"]}})
        assert saved["id_str"] == str(saved["id"])
        loaded = await call(client, "load_working_context", {"project": "veles", "session": "run-42"})
        evidence = loaded["working"]["exact_evidence"][0]
        assert evidence["fragment_id"] == str(U64_MAX) and evidence["memory_id"] == str(2**53 + 1)
        assert loaded["working"]["decisions"] == [{"text": "roll back first"}]
        again = await call(client, "save_working_context", {"project": "veles", "session": "run-42",
                                                            "working": loaded["working"]})
        assert again["id"] == saved["id"]  # an enriched reload saves back unchanged
        typo = await call(client, "load_working_context", {"project": "veles", "session": "run-24"})
        assert typo == {"found": False, "working": None, "other_sessions": ["run-42"]}
        listed = await call(client, "list_working_contexts", {"project": "veles"})
        assert [s["session"] for s in listed["sessions"]] == ["run-42"]


async def test_domain_errors_are_json_rpc_invalid_params(server, tmp_path: Path) -> None:
    async with Client(server) as client:
        for args, fragment in (
            ({"query": "q", "token_budget": 5, "fragments": [{"path": "relative.txt"}]}, "absolute"),
            ({"query": "q", "token_budget": 5, "fragments": [{"path": str(tmp_path)}]}, "outside every"),
            ({"query": "q", "token_budget": 5, "fragments": [{"content": "x", "media": {"mime": "image/png",
                                                                                     "bytes_b64": "!!"}}]}, "base64"),
        ):
            with pytest.raises(MCPError) as info:
                await client.call_tool("compile_context", args)
            assert info.value.error.code == -32602 and fragment in info.value.error.message
        with pytest.raises(MCPError) as info:
            await client.call_tool("retrieve_context_source", {"handle": "ctx://source/1"})
        assert info.value.error.code == -32602


async def test_huge_handle_is_invalid_input(server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("retrieve_context_source", {"handle": "ctx://source/" + "9" * 4301})
    assert info.value.error.code == -32602
    assert "at most 20 digits" in info.value.error.message


@pytest.mark.integration
async def test_one_https_round_trip_through_the_daemon(tmp_path: Path) -> None:
    from velesmem.daemon.tls import client_ssl_context

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    root = tmp_path / "ingest"
    root.mkdir()
    fifo = root / "pipe.log"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
    env.update(HOME=str(tmp_path), VELESDB_MEMORY_PATH=str(tmp_path / "store"),
               VELESDB_MEMORY_TLS_DIR=str(tmp_path / "tls"), VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}",
               VELESDB_MEMORY_INGEST_ROOTS=str(root))
    log = tmp_path / "daemon.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    ca = tmp_path / "tls" / "ca-cert.pem"

    def healthy() -> bool:
        assert proc.poll() is None, log.read_text(errors="replace")
        if not ca.exists():
            return False
        try:
            return httpx.get(f"https://127.0.0.1:{port}/health", verify=client_ssl_context(ca), timeout=2).status_code == 200
        except (httpx.HTTPError, OSError):
            return False

    try:
        wait_for(healthy, 30, "daemon /health")
        png = png_b64(50, 40)
        transport = StreamableHttpTransport(f"https://127.0.0.1:{port}/mcp", verify=client_ssl_context(ca))
        async with Client(transport) as client:
            out = await call(client, "compile_context", {
                "query": "q", "token_budget": 1,
                "fragments": [{"content": "", "media": {"mime": "image/png", "bytes_b64": png}}]})
            handle = out["retrieval_handles"][0]["handle"]
            assert (await call(client, "retrieve_context_source", {"handle": handle}))["media"]["bytes_b64"] == png
            if fifo.exists():  # a FIFO in an ingest root is refused at once, never waited on
                with pytest.raises(MCPError, match="not a regular file"):
                    await asyncio.wait_for(client.call_tool("compile_context", {
                        "query": "q", "token_budget": 100, "fragments": [{"path": str(fifo)}]}), 20)
    finally:
        proc.terminate()
        proc.wait(30)  # SIGTERM still stops it


def test_a_bad_ingest_root_refuses_to_start(tmp_path: Path) -> None:
    import velesmem
    from velesmem.errors import Internal

    settings = Settings.from_env().with_overrides(path=tmp_path / "store",
                                                  ingest_roots=(str(tmp_path / "missing"),))
    with pytest.raises(Internal, match="does not exist"):
        velesmem.open(settings.path, settings=settings)
    assert not (tmp_path / "store").exists()  # refused before the store was touched

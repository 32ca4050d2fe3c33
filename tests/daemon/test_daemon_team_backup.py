"""A team store's backup restores: facts written over HTTPS with bearer tokens carry the token's
name (``_veles_author``); ``velesdb-memory export`` from beside the running daemon, then
``velesdb-memory import`` into a fresh store, brings back every fact with its author, links,
confidence and TTL (issue: the import refused the key and restored 0 facts)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_helpers import Daemon, structured
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "velesmem", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def token(daemon: Daemon, name: str) -> str:
    done = cli(daemon.env, "token", "create", "--name", name)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def authed(daemon: Daemon, bearer: str) -> Client:
    return Client(StreamableHttpTransport(daemon.url, verify=daemon.ssl_context(),
                                          headers={"Authorization": f"Bearer {bearer}"}))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_token_written_backup_restores_every_fact_with_its_author(
        make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_AUTH="token")
    alice, bob = token(daemon, "alice"), token(daemon, "bob")
    daemon.start()
    async with authed(daemon, alice) as client:
        a = structured(await client.call_tool("remember", {
            "fact": "the canary ships on Tuesday", "metadata": {"project": "x"}}))
    async with authed(daemon, bob) as client:
        b = structured(await client.call_tool("remember", {
            "fact": "the canary needs the new load balancer", "ttl_seconds": 86400,
            "links": [{"target": a["id_str"], "relation": "supports"}]}))
        structured(await client.call_tool("feedback", {"id": a["id_str"], "success": True}))
    backup = tmp_path / "backup.jsonl"
    done = cli(daemon.env, "export", "--output", str(backup))
    assert done.returncode == 0, done.stderr
    exported = lines(backup)
    assert {line["metadata"]["_veles_author"] for line in exported
            if line["type"] == "fact"} == {"alice", "bob"}

    restored = {**daemon.env, "VELESDB_MEMORY_PATH": str(tmp_path / "restored")}
    done = cli(restored, "import", str(backup))
    assert done.returncode == 0, done.stderr
    assert "imported 2 facts and 1 edges" in done.stderr
    again = tmp_path / "again.jsonl"
    done = cli(restored, "export", "--output", str(again))
    assert done.returncode == 0, done.stderr
    assert lines(again) == exported  # authors, confidence, times, TTL and the link
    by_id = {line["id_str"]: line for line in lines(again) if line["type"] == "fact"}
    assert by_id[a["id_str"]]["confidence"] > 0.5
    assert by_id[b["id_str"]]["expires_at"] is not None

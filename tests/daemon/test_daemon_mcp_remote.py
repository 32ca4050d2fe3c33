"""The real Claude Desktop bridge, mcp-remote (pinned in tests/node), over strict TLS: it works with
NODE_EXTRA_CA_CERTS and fails without it. JS rounds numbers above 2^53, so ids travel as id_str."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Daemon, clean_env

pytestmark = pytest.mark.integration

MCP_REMOTE = Path(__file__).resolve().parents[1] / "node" / "node_modules" / ".bin" / "mcp-remote"
REPLY_DEADLINE_S = 30.0



@pytest.fixture(autouse=True)
def _bridge_installed() -> None:
    """The bridge is part of the product's path: a missing one fails the test, never skips it."""
    assert shutil.which("node") is not None, "Node.js is needed to run mcp-remote"
    assert MCP_REMOTE.exists(), "mcp-remote is not installed: run `npm install --no-save` in tests/node (.ci/run does)"


class Bridge:
    """mcp-remote as a stdio JSON-RPC peer, with a temp HOME, config dir and npm cache."""

    def __init__(self, daemon: Daemon, home: Path, with_ca: bool,
                 entry: dict[str, Any] | None = None) -> None:
        """``entry``: run the command, args and env of a Claude Desktop entry instead."""
        env = clean_env(home, MCP_REMOTE_CONFIG_DIR=str(home / "mcp-auth"), npm_config_cache=str(home / "npm"))
        for name in ("NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_OPTIONS"):
            env.pop(name, None)
        if with_ca:
            env["NODE_EXTRA_CA_CERTS"] = str(daemon.ca)
        argv = [str(MCP_REMOTE), daemon.url, "--transport", "http-only"]
        if entry is not None:
            argv = [entry["command"], *entry["args"]]
            env.update(entry["env"])
        self.stderr = home / "mcp-remote.log"
        with self.stderr.open("wb") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw.decode())
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            try:
                line = self.lines.get(timeout=REPLY_DEADLINE_S)
            except queue.Empty:
                raise AssertionError(f"no answer to {method} within {REPLY_DEADLINE_S}s: {self.log()}") from None
            if line is None:
                raise AssertionError(f"mcp-remote exited ({self.proc.poll()}) before answering {method}: {self.log()}")
            if not line.strip().startswith("{"):
                continue
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):  # the reader thread ends at EOF
            if pipe is not None:
                pipe.close()


def _tool_json(reply: dict[str, Any]) -> dict[str, Any]:
    assert "result" in reply, reply
    result = reply["result"]
    assert not result.get("isError"), result
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])


def test_mcp_remote_with_the_ca_runs_a_session_relaying_id_str(shared_daemon: Daemon, tmp_path: Path) -> None:
    bridge = Bridge(shared_daemon, tmp_path, with_ca=True)
    try:
        init = bridge.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "velesmem-tests", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "velesdb-memory", init
        bridge.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = {t["name"] for t in bridge.request("tools/list", {})["result"]["tools"]}
        assert {"remember", "recall"} <= tools
        saved = _tool_json(bridge.request("tools/call", {
            "name": "remember", "arguments": {"fact": "mcp-remote bridged this fact over strict TLS"}}))
        id_str = saved["id_str"]
        found = _tool_json(bridge.request("tools/call", {
            "name": "recall", "arguments": {"query": "mcp-remote bridged this fact over strict TLS", "k": 3}}))
        assert id_str in [m["id_str"] for m in found["memories"]]
        # Relay the decimal-string twin (a JS number would have been rounded) back into a tool.
        fed = _tool_json(bridge.request("tools/call", {"name": "feedback", "arguments": {"id": id_str, "success": True}}))
        assert fed["id_str"] == id_str
    finally:
        bridge.close()


def test_mcp_remote_without_the_ca_fails(shared_daemon: Daemon, tmp_path: Path) -> None:
    bridge = Bridge(shared_daemon, tmp_path, with_ca=False)
    try:
        with pytest.raises(AssertionError, match=r"exited|no answer"):
            bridge.request("initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "velesmem-tests", "version": "0"}})
        code = bridge.proc.wait(REPLY_DEADLINE_S)
        assert code != 0
        assert "certificate" in bridge.log().lower(), bridge.log()
    finally:
        bridge.close()


def _desktop_entry_for(daemon: Daemon, token: str) -> dict[str, Any]:
    """The Claude Desktop entry ``velesdb-memory wire --token`` writes, for the pinned bridge."""
    import os

    from velesmem.clients import Host, WireRequest
    from velesmem.clients.catalog import bearer
    from velesmem.clients.node import NodeTools
    from velesmem.clients.wiring import desktop_entry

    node = shutil.which("node")
    assert node is not None
    host = Host("Linux", os.environ.get("HOME", "/"), {"PATH": os.environ.get("PATH", "")})
    tools = NodeTools(node=node, npx=None, mcp_remote=str(MCP_REMOTE))
    request = WireRequest(daemon.url, str(daemon.ca), token=token)
    return desktop_entry(host, tools, request, bearer(token))


def test_mcp_remote_sends_the_token_the_way_wire_writes_it(make_daemon, tmp_path: Path) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_AUTH="token")
    made = subprocess.run([sys.executable, "-m", "velesmem", "token", "create", "--name", "desktop"],
                          env=daemon.env, capture_output=True, text=True, timeout=60, check=True)
    token = made.stdout.strip()
    daemon.start()
    entry = _desktop_entry_for(daemon, token)
    assert token not in " ".join(entry["args"])
    bridge = Bridge(daemon, tmp_path, with_ca=True, entry=entry)
    try:
        init = bridge.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "velesmem-tests", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "velesdb-memory", init
        bridge.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        _tool_json(bridge.request("tools/call", {
            "name": "remember", "arguments": {"fact": "bridged with a bearer token"}}))
        listed = _tool_json(bridge.request("tools/call", {"name": "list_memories", "arguments": {}}))
    finally:
        bridge.close()
    assert listed["memories"][0]["metadata"]["_veles_author"] == "desktop"
    assert token not in daemon.output() and token not in bridge.log()

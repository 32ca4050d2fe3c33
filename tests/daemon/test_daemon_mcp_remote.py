"""The real Claude Desktop bridge, mcp-remote (pinned in tests/node), over strict TLS: it works with
NODE_EXTRA_CA_CERTS and fails without it. JS rounds numbers above 2^53, so ids travel as id_str."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
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
    assert MCP_REMOTE.exists(), "mcp-remote is not installed: run `npm ci` in tests/node (.ci/run does)"


class Bridge:
    """mcp-remote as a stdio JSON-RPC peer, with a temp HOME, config dir and npm cache."""

    def __init__(self, daemon: Daemon, home: Path, with_ca: bool) -> None:
        env = clean_env(home, MCP_REMOTE_CONFIG_DIR=str(home / "mcp-auth"), npm_config_cache=str(home / "npm"))
        for name in ("NODE_EXTRA_CA_CERTS", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_OPTIONS"):
            env.pop(name, None)
        if with_ca:
            env["NODE_EXTRA_CA_CERTS"] = str(daemon.ca)
        self.stderr = home / "mcp-remote.log"
        self.proc = subprocess.Popen(
            [str(MCP_REMOTE), daemon.url, "--transport", "http-only"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr.open("wb"), env=env,
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
        with pytest.raises(AssertionError, match="exited|no answer"):
            bridge.request("initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "velesmem-tests", "version": "0"}})
        code = bridge.proc.wait(REPLY_DEADLINE_S)
        assert code != 0
        assert "certificate" in bridge.log().lower(), bridge.log()
    finally:
        bridge.close()

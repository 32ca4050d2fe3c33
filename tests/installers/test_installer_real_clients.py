"""The real agent CLIs connect through what the installer wires, and ``doctor`` agrees with each.

The installer runs in a temp HOME with the CLIs pinned in tests/node/package.json on PATH (Claude
Code, Codex, opencode, Gemini CLI, Qwen Code, Copilot CLI), the daemon on a non-default port. Then
each CLI's own model-free check runs under ``env -i`` (only HOME and PATH: no CA variable, so the
machine's NODE_EXTRA_CA_CERTS / SSL_CERT_FILE prove nothing) and must report velesdb-memory
connected: ``claude mcp list``, ``gemini mcp list``, ``qwen mcp list``, ``opencode mcp list`` and
Codex's ``app-server`` ``mcpServerStatus/list``. Copilot CLI opens no MCP server before a GitHub
login, so only its config file is checked, and doctor must call it "not verifiable".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from installer_helpers import NODE_DIR, free_port, run_installer

pytestmark = pytest.mark.integration

BIN = NODE_DIR / "node_modules" / ".bin"
CLIS = ("claude", "codex", "opencode", "gemini", "qwen", "copilot")
CMD = str(Path(sys.executable).parent / "velesdb-memory")
OURS = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CHECK_TIMEOUT_S = 120.0


def _require_clis() -> None:
    """Skip only without Node or npm; with them, a CLI missing from tests/node is a failure."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed, so the pinned agent CLIs cannot be (.ci/run installs Node)")
    absent = [c for c in CLIS if not (BIN / c).exists()]
    assert not absent, f"tests/node has no {', '.join(absent)}: npm install there failed (see the session's start)"


@dataclass
class Machine:
    home: Path
    project: Path
    port: int
    installed: subprocess.CompletedProcess[str]

    @property
    def path(self) -> str:
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        return os.pathsep.join([str(BIN), node, "/usr/bin", "/bin"])

    def env(self, **extra: str) -> dict[str, str]:
        """``env -i`` with HOME and PATH only (plus the checkout under test, when there is one)."""
        return {"HOME": str(self.home), "PATH": self.path, **extra}

    def run(self, *argv: str, **extra: str) -> str:
        done = subprocess.run(list(argv), env=self.env(**extra), cwd=self.project, capture_output=True,
                              text=True, timeout=CHECK_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
        return ANSI.sub("", done.stdout + done.stderr)


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    _require_clis()
    home = tmp_path_factory.mktemp("clients-home")
    project = home / "project"
    project.mkdir()
    port = free_port()
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    installed = run_installer(home, f"--port={port}", "--yes", "--skip-ca-trust", timeout=300.0,
                              PATH=path, **OURS)
    # Gemini CLI starts servers only in trusted folders: the user trusts this project, as gemini asks.
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini/trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    try:
        yield Machine(home, project, port, installed)
    finally:
        pid_file = home / ".local/state/velesdb-memory/daemon.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


def _line(output: str) -> str:
    return next((line for line in output.splitlines() if "velesdb-memory" in line and
                 ("connected" in line.lower() or "fail" in line.lower() or "disabled" in line.lower()
                  or "✗" in line)), output[-1500:])


def test_the_installer_wires_every_cli_on_path_with_the_stdio_command(machine: Machine) -> None:
    out = machine.installed.stdout
    assert machine.installed.returncode == 0, out + machine.installed.stderr
    for client in ("claude-code", "codex", "opencode", "gemini", "qwen", "copilot"):
        assert re.search(rf"done +client {client}\b", out), (client, out)
    home = machine.home
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["velesdb-memory"]["command"] == CMD
    stdio = {"command": CMD, "args": []}
    assert json.loads((home / ".gemini/settings.json").read_text())["mcpServers"]["velesdb-memory"] == stdio
    assert json.loads((home / ".qwen/settings.json").read_text())["mcpServers"]["velesdb-memory"] == stdio
    # Copilot CLI needs a GitHub login before it opens any server: its file is what we can check.
    assert json.loads((home / ".copilot/mcp-config.json").read_text()) == {"mcpServers": {
        "velesdb-memory": {"type": "local", "command": CMD, "args": [], "tools": ["*"]}}}
    assert f"127.0.0.1:{machine.port}" in out and machine.port != 18090


@pytest.mark.parametrize("cli", ["claude", "gemini", "qwen"])
def test_the_clis_own_list_reports_velesmem_connected_with_no_ca_variable(machine: Machine, cli: str) -> None:
    said = machine.run(cli, "mcp", "list")
    line = _line(said)
    assert "velesdb-memory" in line and re.search(r"\bconnected\b", line.lower()), said[-2000:]
    assert "disconnected" not in line.lower()


def test_opencode_reports_velesmem_connected_with_no_ca_variable(machine: Machine) -> None:
    said = machine.run("opencode", "mcp", "list")
    assert re.search(r"✓ velesdb-memory\s+connected", said), said[-2000:]


def test_codex_app_server_reports_a_velesmem_session_with_no_ca_variable(machine: Machine) -> None:
    proc = subprocess.Popen([str(BIN / "codex"), "app-server"], env=machine.env(), cwd=machine.project,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"clientInfo": {"name": "velesmem-test", "version": "1"}}},
                        {"jsonrpc": "2.0", "method": "initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "mcpServerStatus/list", "params": {}}):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        status = None
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == 2:
                status = message
                break
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert status is not None, "codex app-server closed before answering"
    (ours,) = [s for s in status["result"]["data"] if s["name"] == "velesdb-memory"]
    assert ours["serverInfo"] is not None, ours.get("toolsError")
    assert "remember" in ours["tools"] and "recall" in ours["tools"]


def test_doctor_agrees_with_each_cli(machine: Machine) -> None:
    said = machine.run(sys.executable, "-m", "velesmem", "doctor", **OURS)
    for client in ("claude-code", "codex", "opencode", "gemini", "qwen"):
        assert f"[ ok ] {client}: connected (stdio {CMD}" in said, (client, said)
    assert "[ -- ] copilot: wired" in said and "not verifiable" in said, said
    assert "[ ok ] copilot" not in said

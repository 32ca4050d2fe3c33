"""The .sh installer end to end on Linux: a temp HOME, a real daemon started by the installer
(background manager — no systemd here), real NSS trust, real Node probe, real config files.

The tests in this module run in order against one installation (one daemon start is the slow
part); each asserts one property of it. The last one uninstalls.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from installer_helpers import NODE_DIR, clean_env, free_port, health_ok, poll, require, run_installer

URL_T = "https://127.0.0.1:{port}/mcp"
CODEX_ORIGINAL = 'model = "o3"  # mine\n\n[mcp_servers.other]\ncommand = "other"\n'
CURSOR_ORIGINAL = {"editor.theme": "dark", "mcpServers": {"other": {"command": "/bin/other"}}}


@dataclass
class Install:
    home: Path
    port: int
    first: subprocess.CompletedProcess[str]

    @property
    def url(self) -> str:
        return URL_T.format(port=self.port)

    @property
    def ca(self) -> Path:
        return self.home / ".velesdb-memory-tls" / "ca-cert.pem"

    def configs(self) -> dict[str, Path]:
        return {
            "cursor": self.home / ".cursor/mcp.json",
            "windsurf": self.home / ".codeium/windsurf/mcp_config.json",
            "devin": self.home / ".config/devin/config.json",
            "claude-desktop": self.home / ".config/Claude/claude_desktop_config.json",
            "codex": self.home / ".codex/config.toml",
        }

    def snapshot(self) -> dict[str, bytes]:
        """Every file under HOME's client config dirs, with its bytes (backups included)."""
        files = {}
        for top in (".cursor", ".codeium", ".config", ".codex"):
            for path in (self.home / top).rglob("*"):
                if path.is_file():
                    files[str(path.relative_to(self.home))] = path.read_bytes()
        return files

    def pid(self) -> int:
        return int((self.home / ".local/state/velesdb-memory/daemon.pid").read_text())


def _stop_leftover(home: Path) -> None:
    pid_file = home / ".local/state/velesdb-memory/daemon.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory):
    require("node")
    require("certutil")
    home = tmp_path_factory.mktemp("install-home")
    (home / ".cursor").mkdir()
    (home / ".cursor/mcp.json").write_text(json.dumps(CURSOR_ORIGINAL, indent=4))
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text(CODEX_ORIGINAL)
    port = free_port()
    first = run_installer(home, f"--port={port}", "--yes", "--ttl", "86400")
    try:
        yield Install(home, port, first)
    finally:
        _stop_leftover(home)


def test_first_run_starts_the_daemon_trusts_the_ca_and_wires_every_file_client(install: Install) -> None:
    assert install.first.returncode == 0, install.first.stdout + install.first.stderr
    assert health_ok(install.port, install.ca)
    out = install.first.stdout
    assert "summary" in out and "daemon started" in out and "CA trust in the NSS database" in out
    assert "client claude-code — `claude` CLI not found" in out  # skipped, and why
    url = install.url
    configs = install.configs()
    assert json.loads(configs["cursor"].read_text()) == {
        **CURSOR_ORIGINAL, "mcpServers": {**CURSOR_ORIGINAL["mcpServers"], "velesdb-memory": {"type": "http", "url": url}}}
    assert json.loads(configs["windsurf"].read_text()) == {"mcpServers": {"velesdb-memory": {"serverUrl": url}}}
    assert json.loads(configs["devin"].read_text()) == {
        "version": 1, "mcpServers": {"velesdb-memory": {"url": url, "transport": "http"}}}
    desktop = json.loads(configs["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    node_dir = os.path.dirname(require("node"))
    assert desktop["command"] == os.path.join(node_dir, "npx")
    assert desktop["args"] == ["-y", "mcp-remote", url, "--transport", "http-only"]
    assert desktop["env"]["NODE_EXTRA_CA_CERTS"] == str(install.ca)
    assert desktop["env"]["PATH"].split(":")[0] == node_dir
    codex = tomllib.loads(configs["codex"].read_text())
    assert codex["mcp_servers"] == {"other": {"command": "other"}, "velesdb-memory": {"url": url}}
    assert codex["model"] == "o3" and "# mine" in configs["codex"].read_text()
    # the pre-existing files were backed up before the change, with their original bytes
    (cursor_bak,) = configs["cursor"].parent.glob("mcp.json.bak.*")
    assert json.loads(cursor_bak.read_text()) == CURSOR_ORIGINAL
    (codex_bak,) = configs["codex"].parent.glob("config.toml.bak.*")
    assert codex_bak.read_text() == CODEX_ORIGINAL
    # the TTL and port are baked into what the service runs
    spec = json.loads((install.home / ".local/state/velesdb-memory/daemon.json").read_text())
    assert spec["port"] == install.port and spec["ttl"] == 86400


def test_ca_is_in_the_users_nss_database(install: Install) -> None:
    done = subprocess.run([require("certutil"), "-L", "-d", f"sql:{install.home / '.pki/nssdb'}"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert "VelesDB Memory Local CA" in done.stdout


def test_second_run_changes_nothing_and_adds_no_backup(install: Install) -> None:
    before, pid = install.snapshot(), install.pid()
    again = run_installer(install.home, f"--port={install.port}", "--yes", "--ttl", "86400")
    assert again.returncode == 0, again.stdout + again.stderr
    assert install.snapshot() == before
    assert install.pid() == pid  # not restarted
    assert "daemon unchanged" in again.stdout and "already trusted" in again.stdout
    assert again.stdout.count("unchanged") >= 6


def test_claude_desktop_entry_answers_tools_list_through_the_real_daemon(install: Install) -> None:
    entry = json.loads(install.configs()["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    # As Desktop spawns it: command + args + env, no shell. HOME/npm cache are the temp ones; the
    # working directory holds the pinned mcp-remote (tests/node), so npx needs no download.
    env = {**entry["env"], "HOME": str(install.home), "npm_config_cache": str(install.home / ".npm-cache"),
           "MCP_REMOTE_CONFIG_DIR": str(install.home / ".mcp-auth")}
    assert (NODE_DIR / "node_modules/.bin/mcp-remote").exists(), "run `npm ci` in tests/node (.ci/run does)"
    proc = subprocess.Popen([entry["command"], *entry["args"]], env=env, cwd=NODE_DIR, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def send(message: dict) -> None:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()

        def answer(want: int) -> dict:
            while True:
                line = proc.stdout.readline()
                assert line, f"bridge closed: {proc.stderr.read()[-2000:]}"
                message = json.loads(line)
                if message.get("id") == want:
                    return message

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "desktop-like", "version": "1"}}})
        assert "result" in answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        names = {tool["name"] for tool in answer(2)["result"]["tools"]}
        assert {"remember", "recall", "memory_status"} <= names
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_invalid_json_is_left_byte_identical_and_reported(install: Install) -> None:
    windsurf = install.configs()["windsurf"]
    good = windsurf.read_bytes()
    windsurf.write_bytes(b'{"mcpServers": {,}')
    try:
        run = run_installer(install.home, f"--port={install.port}", "--wire-only", "--yes")
        assert run.returncode == 1
        assert windsurf.read_bytes() == b'{"mcpServers": {,}'
        assert not list(windsurf.parent.glob("mcp_config.json.bak.*"))
        assert "windsurf" in run.stdout and "is not valid JSON" in run.stdout
        assert "failed   client windsurf" in run.stdout
    finally:
        windsurf.write_bytes(good)


def test_new_port_restarts_the_daemon_and_rewires_every_client(install: Install) -> None:
    old_port, old_pid = install.port, install.pid()
    new_port = free_port()
    run = run_installer(install.home, f"--port={new_port}", "--yes", "--ttl", "86400")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "daemon restarted" in run.stdout
    install.port = new_port
    assert install.pid() != old_pid
    assert health_ok(new_port, install.ca) and not health_ok(old_port, install.ca)
    configs = install.configs()
    assert json.loads(configs["windsurf"].read_text())["mcpServers"]["velesdb-memory"]["serverUrl"] == install.url
    desktop = json.loads(configs["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    assert install.url in desktop["args"]
    assert tomllib.loads(configs["codex"].read_text())["mcp_servers"]["velesdb-memory"] == {"url": install.url}
    assert len(list(configs["windsurf"].parent.glob("mcp_config.json.bak.*"))) == 1  # backed up once


def test_doctor_sees_the_installed_service_trust_and_clients(install: Install) -> None:
    done = subprocess.run([sys.executable, "-m", "velesmem", "doctor", "--port", str(install.port)],
                          env=clean_env(install.home), capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"[ ok ] service: background (pid {install.pid()}" in done.stdout
    assert f"store {install.home / '.velesdb-memory'}" in done.stdout
    assert "[ ok ] the CA is trusted in the NSS database" in done.stdout
    assert f"[ ok ] claude-desktop: wired to {install.url}" in done.stdout


def test_uninstall_removes_exactly_our_entries_and_keeps_store_and_ca(install: Install) -> None:
    run = run_installer(install.home, "--uninstall", "--yes")
    assert run.returncode == 0, run.stdout + run.stderr
    configs = install.configs()
    assert json.loads(configs["cursor"].read_text()) == CURSOR_ORIGINAL
    assert json.loads(configs["windsurf"].read_text()) == {"mcpServers": {}}
    assert json.loads(configs["devin"].read_text()) == {"version": 1, "mcpServers": {}}
    assert json.loads(configs["claude-desktop"].read_text()) == {"mcpServers": {}}
    assert configs["codex"].read_text() == CODEX_ORIGINAL
    poll(lambda: not health_ok(install.port, install.ca), timeout=30, what="the daemon to stop")
    assert not (install.home / ".local/state/velesdb-memory/daemon.pid").exists()
    assert install.ca.exists() and (install.home / ".velesdb-memory").is_dir()
    done = subprocess.run([require("certutil"), "-L", "-d", f"sql:{install.home / '.pki/nssdb'}"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert "VelesDB Memory Local CA" in done.stdout  # trust is never removed


def test_busy_port_is_refused_and_nothing_is_wired(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        run = run_installer(tmp_path, f"--port={port}", "--yes")
    assert run.returncode == 1
    assert f"port {port} on 127.0.0.1 is held by another program" in run.stderr
    assert "--port=<other>" in run.stderr
    assert f"pid {os.getpid()} (" in run.stderr  # the holder is named (this test process)
    assert not (tmp_path / ".cursor").exists() and not (tmp_path / ".config").exists()
    assert not (tmp_path / ".local/state/velesdb-memory/daemon.pid").exists()
    assert "failed" in run.stdout and "no client was wired" in run.stdout


def test_bad_flag_is_refused_with_usage(tmp_path: Path) -> None:
    run = subprocess.run(["bash", str(Path(__file__).parents[2] / "installers/install-memory-daemon.sh"),
                          "--port=abc"], env=clean_env(tmp_path), capture_output=True, text=True, timeout=30,
                         check=False)
    assert run.returncode == 2 and "--port must be a number" in run.stderr

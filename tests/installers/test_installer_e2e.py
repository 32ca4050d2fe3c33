"""The .sh installer end to end on Linux: a temp HOME, a real daemon started by the installer on a
non-default port (background manager — no systemd here), real trust, real Node probe, real
config files, and every later command finding that daemon with no flag and no variable.

The tests in this module run in order against one installation (one daemon start is the slow
part); each asserts one property of it. The uninstall comes last.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from installer_helpers import (CERTUTIL_MISSING, NODE_DIR, clean_env, free_port, health_ok, wait_for, require,
                               require_os_tool, run_installer)
from velesmem.clients.jsonc import loads as jsonc_loads

pytestmark = pytest.mark.integration  # every test here starts a process

URL_T = "https://127.0.0.1:{port}/mcp"
# The code under test: a checkout on PYTHONPATH runs ahead of the installed package here too.
OURS = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
CMD = str(Path(sys.executable).parent / "velesdb-memory")  # what every stdio entry runs
STDIO = {"command": CMD, "args": []}
CODEX_ORIGINAL = 'model = "o3"  # mine\n\n[mcp_servers.other]\ncommand = "other"\n'
CURSOR_ORIGINAL = {"editor.theme": "dark", "mcpServers": {"other": {"command": "/bin/other"}}}
ZED_ORIGINAL = '// Zed settings\n{\n  "theme": "One Dark", // mine\n  "vim_mode": true,\n}\n'


@dataclass
class Install:
    home: Path
    port: int
    first: subprocess.CompletedProcess[str]
    runs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return URL_T.format(port=self.port)

    @property
    def ca(self) -> Path:
        return self.home / ".velesdb-memory-tls" / "ca-cert.pem"

    @property
    def record(self) -> Path:
        return self.home / ".local/state/velesdb-memory/installed.json"

    @property
    def bin_dir(self) -> Path:
        return self.home / ".local/bin"

    def configs(self) -> dict[str, Path]:
        return {
            "cursor": self.home / ".cursor/mcp.json",
            "windsurf": self.home / ".codeium/windsurf/mcp_config.json",
            "devin": self.home / ".config/devin/config.json",
            "claude-desktop": self.home / ".config/Claude/claude_desktop_config.json",
            "codex": self.home / ".codex/config.toml",
            "zed": self.home / ".config/zed/settings.json",
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

    def velesmem(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """A command as the user types it: no flag, no VELESDB_MEMORY_* variable."""
        return subprocess.run([sys.executable, "-m", "velesmem", *args], env=clean_env(self.home, **OURS),
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)


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
    home = tmp_path_factory.mktemp("install-home")
    (home / ".cursor").mkdir()
    (home / ".cursor/mcp.json").write_text(json.dumps(CURSOR_ORIGINAL, indent=4))
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text(CODEX_ORIGINAL)
    (home / ".config/zed").mkdir(parents=True)  # Zed is installed; Cline and opencode are not
    (home / ".config/zed/settings.json").write_text(ZED_ORIGINAL)
    (home / ".config/Claude").mkdir()  # Claude Desktop is installed; Windsurf and Devin CLI are not
    port = free_port()
    first = run_installer(home, f"--port={port}", "--yes", "--ttl", "86400", **OURS)
    try:
        yield Install(home, port, first)
    finally:
        _stop_leftover(home)


class JsonLines:
    """A stdio MCP peer (the Desktop bridge, a stdio client): one JSON-RPC message per line."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def answer(self, want: int) -> dict:
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the peer closed: {self.proc.stderr.read()[-2000:]}"
            message = json.loads(line)
            if message.get("id") == want:
                return message

    def initialize(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "installer-test", "version": "1"}}})
        assert "result" in self.answer(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, want: int, tool: str, arguments: dict) -> dict:
        self.send({"jsonrpc": "2.0", "id": want, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})
        return self.answer(want)["result"]["structuredContent"]


def test_first_run_starts_the_daemon_and_wires_every_installed_client(install: Install) -> None:
    assert install.first.returncode == 0, install.first.stdout + install.first.stderr
    assert health_ok(install.port, install.ca)
    out = install.first.stdout
    assert "summary" in out and "daemon started" in out and "CA trust in the NSS database" in out
    assert f"dashboard — https://127.0.0.1:{install.port}/" in out, out
    said = next(line for line in out.splitlines() if "daemon started: " in line)
    assert "embedder None" not in said and "did not answer" not in said, said  # the store's real one
    assert " dims)" in said, said
    prepared = next(line for line in out.splitlines() if "local model prepared" in line)
    assert prepared.split()[0] == "done" and "all-MiniLM-L6-v2-qint8" in prepared, prepared
    assert "client claude-code — not installed" in out  # skipped, and why
    assert "client cline — not installed" in out and "client opencode — not installed" in out
    assert "client windsurf — not installed" in out and "client gemini — not installed" in out
    url = install.url
    configs = install.configs()
    assert json.loads(configs["cursor"].read_text()) == {
        **CURSOR_ORIGINAL, "mcpServers": {**CURSOR_ORIGINAL["mcpServers"], "velesdb-memory": STDIO}}
    assert not (install.home / ".codeium").exists() and not (install.home / ".config/devin").exists()
    desktop = json.loads(configs["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    node_dir = os.path.dirname(require("node"))
    assert desktop["command"] == os.path.join(node_dir, "npx")
    assert desktop["args"] == ["-y", "mcp-remote@0.15.1", url, "--transport", "http-only"]
    assert desktop["env"]["NODE_EXTRA_CA_CERTS"] == str(install.ca)
    assert desktop["env"]["PATH"].split(":")[0] == node_dir
    codex = tomllib.loads(configs["codex"].read_text())
    assert codex["mcp_servers"] == {"other": {"command": "other"}, "velesdb-memory": STDIO}
    assert codex["model"] == "o3" and "# mine" in configs["codex"].read_text()
    zed = configs["zed"].read_text()
    assert jsonc_loads(zed) == {"theme": "One Dark", "vim_mode": True,
                                "context_servers": {"velesdb-memory": STDIO}}
    assert "// Zed settings" in zed and "// mine" in zed
    assert not (install.home / ".config/opencode").exists()
    # the pre-existing files were backed up before the change, with their original bytes
    (cursor_bak,) = configs["cursor"].parent.glob("mcp.json.bak.*")
    assert json.loads(cursor_bak.read_text()) == CURSOR_ORIGINAL
    (codex_bak,) = configs["codex"].parent.glob("config.toml.bak.*")
    assert codex_bak.read_text() == CODEX_ORIGINAL
    # the TTL and port are baked into what the service runs
    spec = json.loads((install.home / ".local/state/velesdb-memory/daemon.json").read_text())
    assert spec["port"] == install.port and spec["ttl"] == 86400


def test_the_installer_records_where_the_daemon_is(install: Install) -> None:
    record = json.loads(install.record.read_text())
    assert record["format"] == 1 and record["manager"] == "background"
    assert record["settings"]["VELESDB_MEMORY_HTTP_BIND"] == f"127.0.0.1:{install.port}"
    assert record["settings"]["VELESDB_MEMORY_PATH"] == str(install.home / ".velesdb-memory")
    assert record["settings"]["VELESDB_MEMORY_TLS_DIR"] == str(install.home / ".velesdb-memory-tls")
    # no --embedder given: none is pinned, so the store's own embedder keeps serving it
    assert "VELESDB_MEMORY_EMBEDDER" not in record["settings"]
    assert record["settings"]["VELESDB_MEMORY_DEFAULT_TTL"] == "86400"
    assert install.record.stat().st_mode & 0o777 == 0o600


def test_velesdb_memory_is_linked_into_local_bin_and_the_path_hint_is_exact(install: Install) -> None:
    link = install.bin_dir / "velesdb-memory"
    assert link.is_symlink() and Path(os.readlink(link)) == Path(sys.executable).parent / "velesdb-memory"
    done = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=60, check=False,
                          env=clean_env(install.home))
    assert done.returncode == 0 and done.stdout.startswith("velesdb-memory ")
    out = install.first.stdout  # the test PATH has no ~/.local/bin: the installer says how to add it
    assert f"velesdb-memory is in {install.bin_dir}, which is not on your PATH" in out
    assert f'export PATH="{install.bin_dir}:$PATH"' in out
    assert f"{install.bin_dir}/velesdb-memory doctor" in out


def test_every_command_finds_the_installed_daemon_with_no_flag(install: Install) -> None:
    doctor = install.velesmem("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert f"https://127.0.0.1:{install.port}/mcp" in doctor.stdout.splitlines()[0]
    assert f"installer record {install.record}" in doctor.stdout
    assert f"[ ok ] daemon answers https://127.0.0.1:{install.port}/health" in doctor.stdout
    assert f"[ -- ] cursor: wired (stdio {CMD}" in doctor.stdout and "not verifiable" in doctor.stdout
    assert ":18090" not in doctor.stdout

    status = install.velesmem("service", "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"/health on port {install.port}: OK" in status.stdout

    wired = install.velesmem("wire")
    assert wired.returncode == 0, wired.stdout + wired.stderr
    assert f"wiring clients to run {CMD} over stdio, which attaches to the daemon at {install.url}" in wired.stdout
    assert "added" not in wired.stdout and "updated" not in wired.stdout

    store = install.velesmem("status")  # the daemon holds the store: asked over MCP instead
    assert store.returncode == 0, store.stdout + store.stderr
    answer = json.loads(store.stdout)
    assert answer["path"] == str(install.home / ".velesdb-memory") and answer["served_by"] == install.url


def test_a_stdio_client_with_no_variable_attaches_to_the_installed_daemon(install: Install) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "velesmem"], env=clean_env(install.home), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        peer = JsonLines(proc)
        peer.initialize()
        saved = peer.call(2, "remember", {"fact": "a stdio client found the installed daemon"})
        said = proc.communicate(timeout=30)[1]  # stdin closed: the relay ends its session, exits
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, said
    assert f"attaching to {install.url}" in said
    from velesmem.service.mcpprobe import call_tool

    found = call_tool(install.url, str(install.ca), "recall",
                      {"query": "a stdio client found the installed daemon", "k": 3})
    assert saved["id_str"] in [m["id_str"] for m in found["memories"]]


def test_second_run_changes_nothing_and_adds_no_backup(install: Install) -> None:
    before, pid = install.snapshot(), install.pid()
    again = run_installer(install.home, f"--port={install.port}", "--yes", "--ttl", "86400", **OURS)
    install.runs["second"] = again
    assert again.returncode == 0, again.stdout + again.stderr
    assert install.snapshot() == before
    assert install.pid() == pid  # not restarted
    assert "daemon unchanged" in again.stdout
    assert again.stdout.count("unchanged") >= 7
    assert f"already links to {Path(sys.executable).parent / 'velesdb-memory'}" in again.stdout


def test_ca_is_in_the_users_nss_database_once(install: Install) -> None:
    certutil = require_os_tool("certutil", CERTUTIL_MISSING)
    done = subprocess.run([certutil, "-L", "-d", f"sql:{install.home / '.pki/nssdb'}"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.stdout.count("VelesDB Memory Local CA") == 1
    assert "already trusted" in install.runs["second"].stdout
    doctor = install.velesmem("doctor")
    assert "[ ok ] the CA is trusted in the NSS database" in doctor.stdout


def test_claude_desktop_entry_answers_tools_list_through_the_real_daemon(install: Install) -> None:
    entry = json.loads(install.configs()["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    # As Desktop spawns it: command + args + env, no shell. HOME/npm cache are the temp ones; the
    # working directory holds the pinned mcp-remote (tests/node, installed by the test session),
    # which npx uses for the same pinned version, so nothing is downloaded.
    env = {**entry["env"], "HOME": str(install.home), "npm_config_cache": str(install.home / ".npm-cache"),
           "MCP_REMOTE_CONFIG_DIR": str(install.home / ".mcp-auth")}
    assert (NODE_DIR / "node_modules/.bin/mcp-remote").exists(), "tests/conftest.py installs tests/node (npm install --no-save)"
    proc = subprocess.Popen([entry["command"], *entry["args"]], env=env, cwd=NODE_DIR, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        peer = JsonLines(proc)
        peer.initialize()
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        names = {tool["name"] for tool in peer.answer(2)["result"]["tools"]}
        assert {"remember", "recall", "memory_status"} <= names
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_invalid_json_is_left_byte_identical_and_reported_without_failing(install: Install) -> None:
    cursor = install.configs()["cursor"]
    good = cursor.read_bytes()
    backups = sorted(cursor.parent.glob("mcp.json.bak.*"))
    cursor.write_bytes(b'{"mcpServers": {,}')
    try:
        run = run_installer(install.home, "--wire-only", "--yes", **OURS)
        assert run.returncode == 0, run.stdout + run.stderr  # everything asked was done
        assert cursor.read_bytes() == b'{"mcpServers": {,}'
        assert sorted(cursor.parent.glob("mcp.json.bak.*")) == backups
        assert "cursor" in run.stdout and "is not valid JSON" in run.stdout
        assert "warning  client cursor" in run.stdout
        assert f"attaches to the daemon at {install.url}" in run.stdout  # --wire-only found the port too
    finally:
        cursor.write_bytes(good)


def test_new_port_restarts_the_daemon_and_rewires_every_client(install: Install) -> None:
    old_port, old_pid = install.port, install.pid()
    new_port = free_port()
    path = f"{install.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    run = run_installer(install.home, f"--port={new_port}", "--yes", "--ttl", "86400", PATH=path, **OURS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "daemon restarted" in run.stdout
    assert "next: velesdb-memory doctor" in run.stdout  # ~/.local/bin is on this PATH
    install.port = new_port
    assert install.pid() != old_pid
    assert health_ok(new_port, install.ca) and not health_ok(old_port, install.ca)
    configs = install.configs()
    desktop = json.loads(configs["claude-desktop"].read_text())["mcpServers"]["velesdb-memory"]
    assert install.url in desktop["args"]  # the bridge names the URL: rewired
    # the stdio entries name no port (the command finds the daemon through the install record)
    assert tomllib.loads(configs["codex"].read_text())["mcp_servers"]["velesdb-memory"] == STDIO
    assert jsonc_loads(configs["zed"].read_text())["context_servers"]["velesdb-memory"] == STDIO
    assert len(list(configs["cursor"].parent.glob("mcp.json.bak.*"))) == 1  # backed up once
    assert json.loads(install.record.read_text())["settings"]["VELESDB_MEMORY_HTTP_BIND"] == f"127.0.0.1:{new_port}"


def test_a_rerun_without_port_keeps_the_installed_port(install: Install) -> None:
    pid = install.pid()
    run = run_installer(install.home, "--yes", "--ttl", "86400", **OURS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "daemon unchanged" in run.stdout and install.pid() == pid
    assert f"https://127.0.0.1:{install.port}/mcp" in run.stdout


def test_doctor_sees_the_installed_service_and_clients(install: Install) -> None:
    done = install.velesmem("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"[ ok ] service: background (pid {install.pid()}" in done.stdout
    assert f"store {install.home / '.velesdb-memory'}" in done.stdout
    assert f"[ ok ] claude-desktop: wired to {install.url}" in done.stdout
    assert f"[ -- ] zed: wired (stdio {CMD}" in done.stdout  # Zed has no CLI check: not "ok"


def test_uninstall_removes_exactly_our_entries_and_keeps_store_and_ca(install: Install) -> None:
    run = run_installer(install.home, "--uninstall", "--yes", **OURS)
    install.runs["uninstall"] = run
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"(it served https://127.0.0.1:{install.port}/mcp)" in run.stdout  # the right port, named
    assert f"for {install.url}" in run.stdout and ":18090" not in run.stdout
    configs = install.configs()
    assert json.loads(configs["cursor"].read_text()) == CURSOR_ORIGINAL
    assert not configs["claude-desktop"].exists()  # it held only our entry: no empty shell left
    assert configs["codex"].read_text() == CODEX_ORIGINAL
    zed = jsonc_loads(configs["zed"].read_text())
    assert zed.get("context_servers", {}) == {} and zed["theme"] == "One Dark" and "// mine" in configs["zed"].read_text()
    wait_for(lambda: not health_ok(install.port, install.ca), 30, what="the daemon to stop")
    assert not (install.home / ".local/state/velesdb-memory/daemon.pid").exists()
    assert not install.record.exists()  # nothing is installed any more: the defaults apply again
    assert install.ca.exists() and (install.home / ".velesdb-memory").is_dir()


def test_uninstall_never_removes_the_trust(install: Install) -> None:
    certutil = require_os_tool("certutil", CERTUTIL_MISSING)
    assert "uninstall" in install.runs, "runs after the uninstall test"
    done = subprocess.run([certutil, "-L", "-d", f"sql:{install.home / '.pki/nssdb'}"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert "VelesDB Memory Local CA" in done.stdout


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
    assert not (tmp_path / ".local/state/velesdb-memory/installed.json").exists()
    assert "failed" in run.stdout and "no client was wired" in run.stdout


def test_bad_flag_is_refused_with_usage(tmp_path: Path) -> None:
    run = subprocess.run(["bash", str(Path(__file__).parents[2] / "installers/install-memory-daemon.sh"),
                          "--port=abc"], env=clean_env(tmp_path), capture_output=True, text=True, timeout=30,
                         check=False)
    assert run.returncode == 2 and "--port must be a number" in run.stderr

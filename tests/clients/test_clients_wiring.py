"""wire_clients end to end on a temp home: CLIs driven with the right arguments, Desktop's guards."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from velesmem.clients import Host, WireRequest, wire_clients
from velesmem.clients import catalog

URL = "https://127.0.0.1:18090/mcp"
CMD = "/opt/velesmem/venv/bin/velesdb-memory"


def request(**kw) -> WireRequest:
    """A request for the default (stdio) wiring, with a fixed command path."""
    return WireRequest(URL, kw.pop("ca", "ca.pem"), command=CMD, **kw)


def installed_dirs(home: Path, *names: str) -> None:
    """Make clients look installed: their config directories exist."""
    host = host_with(home, "")
    for name in names:
        Path(str(catalog.DETECT_DIRS[name](host))).mkdir(parents=True, exist_ok=True)


def fake_cli(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in for a third-party CLI (claude, codex) that records its argv."""
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def host_with(home: Path, path: str, **env: str) -> Host:
    return Host("Linux", str(home), {"HOME": str(home), "PATH": path, **env})


def by_client(outcomes):
    return {o.client: o for o in outcomes}


def test_installed_clients_get_the_stdio_entry_and_claude_code_without_its_cli_gets_the_add_line(
    tmp_path: Path,
) -> None:
    installed_dirs(tmp_path, "cursor", "windsurf", "devin", "codex", "gemini", "qwen", "copilot")
    (tmp_path / ".claude.json").write_text("{}")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(request(), host))
    for name in ("cursor", "windsurf", "devin", "codex", "gemini", "qwen", "copilot"):
        assert result[name].action == "added", name
    assert result["claude-code"].action == "skipped"
    assert f"claude mcp add --scope user velesdb-memory -- {CMD}" in result["claude-code"].detail
    stdio = {"command": CMD, "args": []}
    assert json.loads((tmp_path / ".cursor/mcp.json").read_text()) == {"mcpServers": {"velesdb-memory": stdio}}
    assert json.loads((tmp_path / ".codeium/windsurf/mcp_config.json").read_text()) == {
        "mcpServers": {"velesdb-memory": stdio}}
    assert json.loads((tmp_path / ".config/devin/config.json").read_text()) == {
        "version": 1, "mcpServers": {"velesdb-memory": stdio}}
    for folder in (".gemini", ".qwen"):
        assert json.loads((tmp_path / folder / "settings.json").read_text()) == {
            "mcpServers": {"velesdb-memory": stdio}}
    assert json.loads((tmp_path / ".copilot/mcp-config.json").read_text()) == {"mcpServers": {
        "velesdb-memory": {"type": "local", "command": CMD, "args": [], "tools": ["*"]}}}
    assert "trustedFolders.json" in result["gemini"].detail
    assert (tmp_path / ".codex/config.toml").read_text() == (
        f'[mcp_servers.velesdb-memory]\ncommand = "{CMD}"\nargs = []\n')


def test_clients_that_are_not_installed_are_skipped_and_get_no_file(tmp_path: Path) -> None:
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(request(), host))
    assert all(o.action == "skipped" and "not installed" in o.detail
               for name, o in result.items() if name != "claude-code-hooks"), result
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_http_transport_writes_urls_and_names_the_ca_variable_each_runtime_reads(tmp_path: Path) -> None:
    installed_dirs(tmp_path, "cursor", "codex", "gemini", "opencode")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(request(ca="/tls/ca-cert.pem", transport="http"), host))
    assert json.loads((tmp_path / ".cursor/mcp.json").read_text()) == {
        "mcpServers": {"velesdb-memory": {"type": "http", "url": URL}}}
    assert json.loads((tmp_path / ".gemini/settings.json").read_text()) == {
        "mcpServers": {"velesdb-memory": {"httpUrl": URL}}}
    assert "CODEX_CA_CERTIFICATE=/tls/ca-cert.pem" in result["codex"].detail
    assert "NODE_EXTRA_CA_CERTS" not in result["codex"].detail
    assert "NODE_EXTRA_CA_CERTS=/tls/ca-cert.pem" in result["gemini"].detail
    assert "SSL_CERT_FILE=/tls/ca-cert.pem" in result["opencode"].detail


def test_uninstall_deletes_a_file_that_held_only_our_entry_and_keeps_one_with_more(tmp_path: Path) -> None:
    installed_dirs(tmp_path, "cursor", "windsurf", "codex")
    (tmp_path / ".cursor/mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    wire_clients(request(), host)
    gone = by_client(wire_clients(request(uninstall=True), host))
    assert gone["windsurf"].action == gone["codex"].action == gone["cursor"].action == "removed"
    assert not (tmp_path / ".codeium/windsurf/mcp_config.json").exists()
    assert not (tmp_path / ".codex/config.toml").exists()
    assert list((tmp_path / ".codeium/windsurf").iterdir()) == []  # no backup of our own entry either
    assert json.loads((tmp_path / ".cursor/mcp.json").read_text()) == {
        "mcpServers": {"other": {"command": "x"}}}


def test_desktop_without_node_prints_the_connector_alternative(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    installed_dirs(tmp_path, "claude-desktop")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    desktop = by_client(wire_clients(WireRequest(URL, str(tmp_path / "ca.pem")), host))["claude-desktop"]
    assert desktop.action == "skipped"
    assert "Add custom connector" in desktop.detail and URL in desktop.detail
    assert not Path(str(catalog.claude_desktop_config(host))).exists()


def test_desktop_refused_when_tls_verification_is_disabled(tmp_path: Path) -> None:
    installed_dirs(tmp_path, "claude-desktop")
    host = host_with(tmp_path, os.environ["PATH"], NODE_TLS_REJECT_UNAUTHORIZED="0")
    desktop = by_client(wire_clients(WireRequest(URL, str(tmp_path / "ca.pem")), host))["claude-desktop"]
    assert desktop.action == "refused"
    assert "NODE_TLS_REJECT_UNAUTHORIZED" in desktop.detail
    assert not Path(str(catalog.claude_desktop_config(host))).exists()


def test_skip_client_leaves_it_alone(tmp_path: Path) -> None:
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    installed_dirs(tmp_path, "cursor", "devin")
    skip = frozenset({"cursor", "devin"})
    result = by_client(wire_clients(request(skip=skip), host))
    assert result["cursor"].action == result["devin"].action == "skipped"
    assert not list((tmp_path / ".cursor").iterdir()) and not list((tmp_path / ".config/devin").iterdir())


@pytest.mark.integration  # the wiring runs the (fake) claude / codex CLIs: processes
def test_claude_code_and_codex_go_through_their_clis(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    fake_cli(bin_dir, "claude", log)
    fake_cli(bin_dir, "codex", log)
    host = host_with(tmp_path, str(bin_dir))
    skip = frozenset({"cursor", "windsurf", "devin", "claude-desktop"})
    result = by_client(wire_clients(request(skip=skip), host))
    assert result["claude-code"].action == result["codex"].action == "added"
    assert log.read_text().splitlines() == [
        f"claude mcp add --scope user velesdb-memory -- {CMD}",
        f"codex mcp add velesdb-memory -- {CMD}",
    ]
    # What the CLIs would have written: now a re-run is a no-op, and an old URL entry is remove + add.
    (tmp_path / ".claude.json").write_text(json.dumps({"mcpServers": {"velesdb-memory": {
        "type": "stdio", "command": CMD, "args": [], "env": {}}}}))
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex/config.toml").write_text('[mcp_servers.velesdb-memory]\nurl = "https://127.0.0.1:1/mcp"\n')
    log.unlink()
    result = by_client(wire_clients(request(skip=skip), host))
    assert result["claude-code"].action == "unchanged"
    assert result["codex"].action == "updated"
    assert log.read_text().splitlines() == [
        "codex mcp remove velesdb-memory",
        f"codex mcp add velesdb-memory -- {CMD}",
    ]
    log.unlink()
    result = by_client(wire_clients(request(skip=skip, transport="http"), host))
    assert log.read_text().splitlines() == [
        "claude mcp remove --scope user velesdb-memory",
        f"claude mcp add --transport http --scope user velesdb-memory {URL}",
        "codex mcp remove velesdb-memory",
        f"codex mcp add velesdb-memory --url {URL}",
    ]
    log.unlink()
    result = by_client(wire_clients(request(skip=skip, uninstall=True), host))
    assert result["claude-code"].action == result["codex"].action == "removed"
    assert log.read_text().splitlines() == [
        "claude mcp remove --scope user velesdb-memory",
        "codex mcp remove velesdb-memory",
    ]


def test_unreadable_config_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor/mcp.json").write_bytes(b"{oops")
    installed_dirs(tmp_path, "windsurf")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(request(), host))
    assert result["cursor"].action == "refused" and "not valid JSON" in result["cursor"].detail
    assert result["windsurf"].action == "added"
    assert (tmp_path / ".cursor/mcp.json").read_bytes() == b"{oops"


def test_unwritable_config_dir_is_a_failed_outcome_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / ".cursor/mcp.json").mkdir(parents=True)  # a directory where the file should be
    installed_dirs(tmp_path, "windsurf")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(request(), host))
    assert result["cursor"].action == "failed" and not result["cursor"].ok
    assert result["windsurf"].action == "added"


def test_desktop_entry_shapes_npx_global_bridge_and_windows() -> None:
    from velesmem.clients.node import NodeTools
    from velesmem.clients.wiring import desktop_entry

    request = WireRequest(URL, "/Users/you/.velesdb-memory-tls/ca-cert.pem")
    mac = Host("Darwin", "/Users/you", {})
    npx = NodeTools(node="/opt/homebrew/bin/node", npx="/opt/homebrew/bin/npx", mcp_remote=None)
    assert desktop_entry(mac, npx, request) == {
        "command": "/opt/homebrew/bin/npx",
        "args": ["-y", "mcp-remote@0.15.1", URL, "--transport", "http-only"],
        "env": {"NODE_EXTRA_CA_CERTS": request.ca_cert, "PATH": "/opt/homebrew/bin:/usr/bin:/bin"},
    }
    bridge = NodeTools(node="/opt/homebrew/bin/node", npx="/opt/homebrew/bin/npx",
                       mcp_remote="/Users/you/.npm-global/bin/mcp-remote")
    entry = desktop_entry(mac, bridge, request)
    assert entry["command"] == "/Users/you/.npm-global/bin/mcp-remote"
    assert entry["args"] == [URL, "--transport", "http-only"]
    assert entry["env"]["PATH"] == "/opt/homebrew/bin:/Users/you/.npm-global/bin:/usr/bin:/bin"
    win = Host("Windows", "C:\\Users\\you", {"SystemRoot": "C:\\Windows"})
    tools = NodeTools(node="C:\\Program Files\\nodejs\\node.exe", npx="C:\\Program Files\\nodejs\\npx.cmd",
                      mcp_remote=None)
    wreq = WireRequest(URL, "C:\\Users\\you\\.velesdb-memory-tls\\ca-cert.pem")
    entry = desktop_entry(win, tools, wreq)
    assert entry["command"] == "C:\\Program Files\\nodejs\\npx.cmd"
    assert entry["env"]["PATH"] == "C:\\Program Files\\nodejs;C:\\Windows\\System32"


def test_stdio_command_is_the_script_beside_the_running_python(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("")
    assert catalog.stdio_command("x", str(bin_dir / "python"), windows=False) is None
    (bin_dir / "velesdb-memory").write_text("")
    assert catalog.stdio_command("x", str(bin_dir / "python"), windows=False) == str(bin_dir / "velesdb-memory")
    other = tmp_path / "elsewhere" / "velesdb-memory"
    other.parent.mkdir()
    other.write_text("")
    assert catalog.stdio_command(str(other), str(tmp_path / "python"), windows=False) == str(other)


def test_every_client_has_one_connection_row_and_a_config_path() -> None:
    assert set(catalog.CONNECTIONS) == set(catalog.CLIENTS) == set(catalog.CONFIG_PATHS)
    assert set(catalog.DETECT_DIRS) == set(catalog.CLIENTS)
    assert catalog.CONNECTIONS["claude-desktop"].transport == "bridge"
    assert {c.transport for n, c in catalog.CONNECTIONS.items() if n != "claude-desktop"} == {"stdio"}
    assert "NODE_EXTRA_CA_CERTS" not in catalog.CONNECTIONS["codex"].trust


def test_desktop_bridge_is_pinned_to_the_mcp_remote_the_tests_run() -> None:
    from velesmem.clients.node import MCP_REMOTE_PACKAGE

    pinned = json.loads((Path(__file__).parents[1] / "node" / "package.json").read_text())["dependencies"]
    assert MCP_REMOTE_PACKAGE == f"mcp-remote@{pinned['mcp-remote']}"
    assert all(ch.isdigit() or ch == "." for ch in pinned["mcp-remote"])  # an exact version, not a range


def test_refused_config_is_a_warning_and_a_failure_is_a_failure(tmp_path: Path) -> None:
    from velesmem.clients.outcome import Outcome

    refused, failed = Outcome("zed", "refused", "not valid"), Outcome("cursor", "failed", "EACCES")
    assert (refused.summary_status(), refused.failed) == ("warning", False)
    assert (failed.summary_status(), failed.failed) == ("failed", True)

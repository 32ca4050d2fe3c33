"""wire_clients end to end on a temp home: CLIs driven with the right arguments, Desktop's guards."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from velesmem.clients import Host, WireRequest, wire_clients
from velesmem.clients import catalog

URL = "https://127.0.0.1:18090/mcp"


def fake_cli(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in for a third-party CLI (claude, codex) that records its argv."""
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def host_with(home: Path, path: str, **env: str) -> Host:
    return Host("Linux", str(home), {"HOME": str(home), "PATH": path, **env})


def by_client(outcomes):
    return {o.client: o for o in outcomes}


def test_file_clients_written_and_cli_clients_skipped_without_their_cli(tmp_path: Path) -> None:
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(WireRequest(URL, str(tmp_path / "ca.pem")), host))
    assert result["cursor"].action == result["windsurf"].action == result["devin"].action == "added"
    assert result["codex"].action == "added"  # no codex CLI: config.toml edited directly
    assert result["claude-code"].action == "skipped"
    assert f"claude mcp add --transport http --scope user velesdb-memory {URL}" in result["claude-code"].detail
    assert json.loads((tmp_path / ".cursor/mcp.json").read_text()) == {
        "mcpServers": {"velesdb-memory": {"type": "http", "url": URL}}}
    assert json.loads((tmp_path / ".codeium/windsurf/mcp_config.json").read_text()) == {
        "mcpServers": {"velesdb-memory": {"serverUrl": URL}}}
    assert json.loads((tmp_path / ".config/devin/config.json").read_text()) == {
        "version": 1, "mcpServers": {"velesdb-memory": {"url": URL, "transport": "http"}}}


def test_desktop_without_node_prints_the_connector_alternative(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    desktop = by_client(wire_clients(WireRequest(URL, str(tmp_path / "ca.pem")), host))["claude-desktop"]
    assert desktop.action == "skipped"
    assert "Add custom connector" in desktop.detail and URL in desktop.detail
    assert not Path(str(catalog.claude_desktop_config(host))).exists()


def test_desktop_refused_when_tls_verification_is_disabled(tmp_path: Path) -> None:
    host = host_with(tmp_path, os.environ["PATH"], NODE_TLS_REJECT_UNAUTHORIZED="0")
    desktop = by_client(wire_clients(WireRequest(URL, str(tmp_path / "ca.pem")), host))["claude-desktop"]
    assert desktop.action == "refused"
    assert "NODE_TLS_REJECT_UNAUTHORIZED" in desktop.detail
    assert not Path(str(catalog.claude_desktop_config(host))).exists()


def test_skip_client_leaves_it_alone(tmp_path: Path) -> None:
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    skip = frozenset({"cursor", "devin"})
    result = by_client(wire_clients(WireRequest(URL, "ca.pem", skip=skip), host))
    assert result["cursor"].action == result["devin"].action == "skipped"
    assert not (tmp_path / ".cursor").exists() and not (tmp_path / ".config/devin").exists()


def test_claude_code_and_codex_go_through_their_clis(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    fake_cli(bin_dir, "claude", log)
    fake_cli(bin_dir, "codex", log)
    host = host_with(tmp_path, str(bin_dir))
    skip = frozenset({"cursor", "windsurf", "devin", "claude-desktop"})
    result = by_client(wire_clients(WireRequest(URL, "ca.pem", skip=skip), host))
    assert result["claude-code"].action == result["codex"].action == "added"
    assert log.read_text().splitlines() == [
        f"claude mcp add --transport http --scope user velesdb-memory {URL}",
        f"codex mcp add velesdb-memory --url {URL}",
    ]
    # What the CLIs would have written: now a re-run is a no-op, and a new URL is remove + add.
    (tmp_path / ".claude.json").write_text(json.dumps({"mcpServers": {"velesdb-memory": {"type": "http", "url": URL}}}))
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex/config.toml").write_text('[mcp_servers.velesdb-memory]\nurl = "https://127.0.0.1:1/mcp"\n')
    log.unlink()
    result = by_client(wire_clients(WireRequest(URL, "ca.pem", skip=skip), host))
    assert result["claude-code"].action == "unchanged"
    assert result["codex"].action == "updated"
    assert log.read_text().splitlines() == [
        "codex mcp remove velesdb-memory",
        f"codex mcp add velesdb-memory --url {URL}",
    ]
    log.unlink()
    result = by_client(wire_clients(WireRequest(URL, "ca.pem", skip=skip, uninstall=True), host))
    assert result["claude-code"].action == result["codex"].action == "removed"
    assert log.read_text().splitlines() == [
        "claude mcp remove --scope user velesdb-memory",
        "codex mcp remove velesdb-memory",
    ]


def test_unreadable_config_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor/mcp.json").write_bytes(b"{oops")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(WireRequest(URL, "ca.pem"), host))
    assert result["cursor"].action == "refused" and "not valid JSON" in result["cursor"].detail
    assert result["windsurf"].action == "added"
    assert (tmp_path / ".cursor/mcp.json").read_bytes() == b"{oops"


def test_unwritable_config_dir_is_a_failed_outcome_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / ".cursor").write_text("a file where the directory should be")
    host = host_with(tmp_path, str(tmp_path / "empty-bin"))
    result = by_client(wire_clients(WireRequest(URL, "ca.pem"), host))
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

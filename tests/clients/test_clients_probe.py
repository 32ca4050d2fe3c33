"""doctor's per-client check reads each CLI's own ``mcp list`` verdict: stand-in CLIs print the
lines the real ones printed (captured from Claude Code 2.1, Gemini CLI 0.61, Qwen Code 0.15,
opencode 1.18); the real CLIs run in tests/installers/test_installer_real_clients.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from velesmem.clients import catalog
from velesmem.clients.host import Host
from velesmem.clients.probe import CONNECTED, FAILED, NOT_VERIFIABLE, probe

pytestmark = pytest.mark.integration  # each check runs a (stand-in) CLI as a subprocess

SAID = {
    "claude": "Checking MCP server health…\n\nvelesdb-memory: /v/bin/velesdb-memory  - ✔ Connected\n",
    "qwen": "Configured MCP servers:\n\x1b[32m✓\x1b[0m velesdb-memory: /v/bin/velesdb-memory  (stdio) - Connected\n",
    "opencode": "┌  MCP Servers\n│\n●  ✗ velesdb-memory \x1b[90mfailed\n│      Connection closed\n",
    "gemini": "Configured MCP servers:\n\n○ velesdb-memory: /v/bin/velesdb-memory  (stdio) - Disabled\n",
}


def cli(bin_dir: Path, name: str, output: str) -> None:
    (bin_dir / f"{name}.out").write_text(output)
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\n/bin/cat "{bin_dir / (name + ".out")}"\n')
    script.chmod(0o755)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, output in SAID.items():
        cli(bin_dir, name, output)
    return Host("Linux", str(tmp_path), {"HOME": str(tmp_path), "PATH": str(bin_dir)})


def test_a_connected_line_is_connected(host: Host) -> None:
    assert probe(catalog.CLAUDE_CODE, host).state == CONNECTED
    assert probe(catalog.QWEN, host).state == CONNECTED


def test_a_failed_line_is_failed_with_what_the_cli_said(host: Host) -> None:
    result = probe(catalog.OPENCODE, host)
    assert result.state == FAILED and "✗ velesdb-memory failed" in result.reason and "\x1b" not in result.reason


def test_gemini_disabled_names_the_folder_trust(host: Host) -> None:
    result = probe(catalog.GEMINI, host)
    assert result.state == FAILED and "trustedFolders.json" in result.reason


def test_no_cli_or_no_check_is_not_verifiable_never_connected(host: Host, tmp_path: Path) -> None:
    assert probe(catalog.CODEX, host).state == NOT_VERIFIABLE  # no codex on this PATH
    assert probe(catalog.CURSOR, host).state == NOT_VERIFIABLE
    copilot = probe(catalog.COPILOT, host)
    assert copilot.state == NOT_VERIFIABLE and "login" in copilot.reason


def test_a_list_without_our_server_is_failed(host: Host, tmp_path: Path) -> None:
    cli(tmp_path / "bin", "claude", "No MCP servers configured.\n")
    result = probe(catalog.CLAUDE_CODE, host)
    assert result.state == FAILED and "does not list velesdb-memory" in result.reason

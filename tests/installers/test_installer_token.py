"""The installer's --token (and VELESMEM_INSTALL_TOKEN): every wired client's stdio entry carries
the token in its environment (the attaching relay sends it as the bearer header), the token reaches
``wire`` through stdin and never the installer's output or summary."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from installer_helpers import free_port, run_installer

from velesmem.clients.catalog import AUTH_TOKEN_ENV

pytestmark = pytest.mark.integration

TOKEN = "vmt_" + "i" * 20 + "-installer-" + "j" * 12


@pytest.mark.parametrize("how", ["flag", "env"])
def test_wire_only_with_a_token_writes_the_header_and_keeps_the_token_out_of_the_output(
    tmp_path: Path, how: str,
) -> None:
    (tmp_path / ".cursor").mkdir()  # only installed clients are wired: these two are
    (tmp_path / ".codex").mkdir()
    port = free_port()
    args = [f"--port={port}", "--wire-only", "--yes", "--skip-client=claude-desktop,claude-code"]
    extra = {}
    if how == "flag":
        args.append(f"--token={TOKEN}")
    else:
        extra["VELESMEM_INSTALL_TOKEN"] = TOKEN
    run = run_installer(tmp_path, *args, **extra)
    assert run.returncode == 0, run.stdout + run.stderr
    assert TOKEN not in run.stdout and TOKEN not in run.stderr
    assert "with a bearer token" in run.stdout
    cursor = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]["velesdb-memory"]
    assert Path(cursor["command"]).is_absolute() and cursor["env"] == {AUTH_TOKEN_ENV: TOKEN}
    codex = tomllib.loads((tmp_path / ".codex/config.toml").read_text())
    assert codex["mcp_servers"]["velesdb-memory"]["env"] == {AUTH_TOKEN_ENV: TOKEN}

    again = run_installer(tmp_path, f"--port={port}", "--wire-only", "--yes",
                          "--skip-client=claude-desktop,claude-code")  # no token: kept
    assert again.returncode == 0, again.stdout + again.stderr
    kept = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]["velesdb-memory"]
    assert kept["env"] == {AUTH_TOKEN_ENV: TOKEN}

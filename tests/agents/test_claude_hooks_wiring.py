"""``wire`` and Claude Code's settings.json: our three hooks written, merged into an existing
file without touching anything else, a re-run unchanged, ``--uninstall`` removing exactly ours;
and the written command, run as Claude Code runs it, reaches the daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from velesmem.clients import Host, WireRequest, wire_clients
from velesmem.clients.claude_hooks import HOOK_EVENTS, HOOK_TIMEOUT_S, hook_command, is_ours

URL = "https://127.0.0.1:18090/mcp"
PYTHON = "/opt/velesmem/venv/bin/python"
CLOCK = lambda: 1_800_000_000.0  # noqa: E731
EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def host_for(home: Path, **env: str) -> Host:
    home.mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text("{}", encoding="utf-8")  # Claude Code has run here
    return Host(system="Linux", home=str(home), env={"PATH": "", **env})


def wire(home: Path, uninstall: bool = False, python: str = PYTHON, **env: str) -> Any:
    only = frozenset({"codex", "claude-desktop", "cursor", "windsurf", "devin", "cline", "zed",
                      "opencode"})
    request = WireRequest(URL, str(home / "ca.pem"), skip=only, uninstall=uninstall, hook_python=python)
    return {o.client: o for o in wire_clients(request, host_for(home, **env), clock=CLOCK)}


def settings(home: Path) -> dict[str, Any]:
    return json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))


def ours(data: dict[str, Any]) -> dict[str, list[str]]:
    return {event: [h["command"] for g in groups for h in g["hooks"] if is_ours(h)]
            for event, groups in data.get("hooks", {}).items()}


def test_a_fresh_settings_file_gets_the_three_hooks(tmp_path: Path) -> None:
    outcome = wire(tmp_path)["claude-code-hooks"]
    assert outcome.action == "added" and outcome.backup is None
    data = settings(tmp_path)
    assert data == {"hooks": {event: [{"hooks": [{"type": "command",
                                                  "command": f"{PYTHON} -P -m velesmem hook {name}",
                                                  "timeout": HOOK_TIMEOUT_S}]}]
                              for event, name in HOOK_EVENTS.items()}}


def test_merged_into_an_existing_file_rerun_unchanged_uninstalled_precisely(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    original = json.dumps(EXISTING, indent=2) + "\n"
    path.write_text(original, encoding="utf-8")
    outcome = wire(tmp_path)["claude-code-hooks"]
    assert outcome.action == "added" and outcome.backup == f"{path}.bak.1800000000"
    assert Path(outcome.backup).read_text(encoding="utf-8") == original
    data = settings(tmp_path)
    assert data["model"] == "opus" and data["permissions"] == EXISTING["permissions"]
    assert data["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == EXISTING["hooks"]["Stop"][0]  # theirs first, ours after
    assert ours(data) == {"PreToolUse": [], "Stop": [hook_command(PYTHON, "stop")],
                          "SessionStart": [hook_command(PYTHON, "session-start")],
                          "PreCompact": [hook_command(PYTHON, "pre-compact")]}
    before = path.read_bytes()
    again = wire(tmp_path)["claude-code-hooks"]
    assert again.action == "unchanged" and again.backup is None and path.read_bytes() == before
    removed = wire(tmp_path, uninstall=True)["claude-code-hooks"]
    assert removed.action == "removed"
    assert settings(tmp_path) == EXISTING
    assert wire(tmp_path, uninstall=True)["claude-code-hooks"].action == "absent"


def test_an_entry_of_ours_for_another_python_is_updated_in_place(tmp_path: Path) -> None:
    wire(tmp_path, python="/old/venv/bin/python")
    data = settings(tmp_path)
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "echo mine"})
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(data), encoding="utf-8")
    assert wire(tmp_path)["claude-code-hooks"].action == "updated"
    stop = settings(tmp_path)["hooks"]["Stop"]
    assert len(stop) == 1 and [h["command"] for h in stop[0]["hooks"]] == [
        hook_command(PYTHON, "stop"), "echo mine"]
    wire(tmp_path, uninstall=True)
    assert settings(tmp_path) == {"hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                 "command": "echo mine"}]}]}}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_a_file_we_cannot_merge_is_refused_and_left_byte_identical(tmp_path: Path, content: str) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    outcome = wire(tmp_path)["claude-code-hooks"]
    assert outcome.action == "refused" and not outcome.failed  # a warning, not a failure
    assert path.read_text(encoding="utf-8") == content
    assert list(path.parent.iterdir()) == [path]


def test_claude_config_dir_and_no_hooks_and_no_claude(tmp_path: Path) -> None:
    custom = tmp_path / "cc"
    custom.mkdir()
    outcome = wire(tmp_path, CLAUDE_CONFIG_DIR=str(custom))["claude-code-hooks"]
    assert outcome.path == str(custom / "settings.json")
    assert (custom / "settings.json").exists() and not (tmp_path / ".claude" / "settings.json").exists()
    bare = tmp_path / "bare"
    (bare / ".claude" / "skills").mkdir(parents=True)  # skills installed, Claude Code never run
    request = WireRequest(URL, "ca.pem", skip=frozenset({"claude-desktop"}))
    outcomes = {o.client: o for o in wire_clients(request, Host("Linux", str(bare), {"PATH": ""}))}
    assert outcomes["claude-code-hooks"].action == "skipped"
    assert not (bare / ".claude" / "settings.json").exists()
    no_hooks = WireRequest(URL, "ca.pem", skip=frozenset({"claude-desktop"}), hooks=False)
    assert "claude-code-hooks" not in {o.client for o in wire_clients(no_hooks, host_for(bare))}
    skipped = WireRequest(URL, "ca.pem", skip=frozenset({"claude-code", "claude-desktop"}))
    assert "claude-code-hooks" not in {o.client for o in wire_clients(skipped, host_for(bare))}


def test_windows_commands_quote_the_python_path() -> None:
    command = hook_command(r"C:\Users\Dana Q\AppData\Local\velesdb-memory\venv\Scripts\python.exe",
                           "stop", windows=True)
    assert command.startswith('"C:\\Users\\Dana Q\\') and command.endswith('" -P -m velesmem hook stop')
    assert is_ours({"command": command}) and not is_ours({"command": "velesmem hook stopper"})
    assert hook_command("/home/dana q/venv/bin/python", "stop") == (
        "'/home/dana q/venv/bin/python' -P -m velesmem hook stop")


@pytest.mark.integration
def test_the_written_command_run_through_a_shell_reaches_the_daemon(daemon: Any, tmp_path: Path) -> None:
    """As Claude Code runs a command hook: the command string through a shell, JSON on stdin."""
    home = Path(daemon.env["HOME"])
    wire(home, python=sys.executable)
    command = settings(home)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    project = tmp_path / "wired-project"
    project.mkdir()
    payload = {"session_id": "wired-1", "cwd": str(project), "hook_event_name": "SessionStart",
               "source": "startup", "transcript_path": str(tmp_path / "t.jsonl")}
    env = {**daemon.env, "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(command, shell=True, input=json.dumps(payload), env=env, cwd=project,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 'project "wired-project"' in context

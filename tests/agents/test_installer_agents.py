"""The .sh installer's agent step: after wiring it installs the skills (Claude Code's directory,
and Codex's when Codex is there) and Claude Code's hooks; ``--uninstall`` takes both back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import Daemon

from velesmem.agents import SKILL_NAMES

INSTALLER = Path(__file__).resolve().parents[2] / "installers" / "install-memory-daemon.sh"


def run_installer(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "TMPDIR": os.environ.get("TMPDIR", "/tmp"), "VELESMEM_INSTALL_PYTHON": sys.executable,
           "VELESMEM_INSTALL_MANAGER": "background", "XDG_STATE_HOME": str(home / ".state")}
    return subprocess.run(["bash", str(INSTALLER), *args], env=env, capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, check=False)


@pytest.mark.integration
def test_the_installer_installs_skills_and_hooks_and_uninstall_removes_them(daemon: Daemon,
                                                                          tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".claude.json").write_text("{}", encoding="utf-8")  # Claude Code has run here
    flags = [f"--port={daemon.port}", f"--tls-dir={daemon.tls_dir}", "--yes"]
    run = run_installer(home, "--wire-only", *flags)
    assert run.returncode == 0, run.stdout + run.stderr
    for root in (home / ".claude" / "skills", home / ".agents" / "skills"):
        for name in SKILL_NAMES:
            assert (root / name / "SKILL.md").is_file(), run.stdout
    hooks = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]
    assert sorted(hooks) == ["PreCompact", "SessionStart", "Stop"]
    assert "skill velesdb-memory (claude)" in run.stdout and "client claude-code-hooks" in run.stdout
    again = run_installer(home, "--wire-only", *flags)
    assert again.returncode == 0 and "skill velesdb-memory (codex)" in again.stdout
    gone = run_installer(home, "--uninstall", *flags)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not any((home / ".claude" / "skills").iterdir())
    assert not any((home / ".agents" / "skills").iterdir())
    assert "hooks" not in json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))

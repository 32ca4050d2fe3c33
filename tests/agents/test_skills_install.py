"""``velesdb-memory skills install``: where each agent gets the skills, idempotence, precise
uninstall, and the Codex AGENTS.md block (appended, replaced in place, removed byte-exactly)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from velesmem.agents import SKILL_NAMES
from velesmem.agents.install import BLOCK_BEGIN, BLOCK_END, install, shipped_files, skills_dir
from velesmem.clients.host import Host

CLOCK = lambda: 1_800_000_000.0  # noqa: E731 — backups get a predictable name


def host(home: Path, **env: str) -> Host:
    return Host(system="Linux", home=str(home), env=env)


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("VELESDB_MEMORY_", "XDG_"))}
    full.update(HOME=str(home), **env)
    full.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run([sys.executable, "-m", "velesmem", "skills", "install", *args], env=full,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.integration
def test_claude_gets_both_skills_byte_for_byte_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    first = cli(tmp_path)
    assert first.returncode == 0, first.stderr
    root = tmp_path / ".claude" / "skills"
    stamps = {}
    for name in SKILL_NAMES:
        path = root / name / "SKILL.md"
        assert path.read_bytes() == shipped_files(name)["SKILL.md"]
        stamps[name] = path.stat().st_mtime_ns
    assert first.stdout.count(" added ") == 2
    again = cli(tmp_path)
    assert again.returncode == 0 and again.stdout.count(" unchanged ") == 2, again.stdout
    assert {n: (root / n / "SKILL.md").stat().st_mtime_ns for n in SKILL_NAMES} == stamps


def test_a_changed_copy_is_updated_and_uninstall_keeps_what_we_did_not_ship(tmp_path: Path) -> None:
    h = host(tmp_path)
    install("claude", h)
    folder = tmp_path / ".claude" / "skills" / "velesdb-memory"
    (folder / "SKILL.md").write_text("stale\n", encoding="utf-8")
    (folder / "NOTES.md").write_text("mine\n", encoding="utf-8")
    actions = {c.item: c.action for c in install("claude", h)}
    assert actions == {"velesdb-memory": "updated", "velesdb-context-optimizer": "unchanged"}
    assert (folder / "SKILL.md").read_bytes() == shipped_files("velesdb-memory")["SKILL.md"]
    removed = {c.item: c for c in install("claude", h, uninstall=True)}
    assert {k: c.action for k, c in removed.items()} == {"velesdb-memory": "removed",
                                                         "velesdb-context-optimizer": "removed"}
    assert sorted(p.name for p in folder.iterdir()) == ["NOTES.md"]
    assert "kept" in removed["velesdb-memory"].detail
    assert not (tmp_path / ".claude" / "skills" / "velesdb-context-optimizer").exists()
    assert {c.action for c in install("claude", h, uninstall=True)} == {"absent"}


@pytest.mark.parametrize(("target", "env", "expected"), [
    ("claude", {}, ".claude/skills"),
    ("claude", {"CLAUDE_CONFIG_DIR": "{home}/cc"}, "cc/skills"),
    ("opencode", {}, ".config/opencode/skills"),
    ("opencode", {"XDG_CONFIG_HOME": "{home}/xdg"}, "xdg/opencode/skills"),
    ("codex", {}, ".agents/skills"),
])
def test_each_target_uses_its_documented_user_directory(tmp_path: Path, target: str,
                                                       env: dict[str, str], expected: str) -> None:
    h = host(tmp_path, **{k: v.format(home=tmp_path) for k, v in env.items()})
    assert skills_dir(target, h) == tmp_path / expected
    changes = install(target, h)
    assert [c.action for c in changes] == ["added", "added"]
    for name in SKILL_NAMES:
        assert (tmp_path / expected / name / "SKILL.md").is_file()


@pytest.mark.integration
@pytest.mark.parametrize(("target", "sub"), [("claude", ".claude"), ("opencode", ".opencode"),
                                             ("codex", ".agents")])
def test_project_installs_go_into_the_project(tmp_path: Path, target: str, sub: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    result = cli(tmp_path / "home", "--target", target, "--project", str(project))
    assert result.returncode == 0, result.stderr
    for name in SKILL_NAMES:
        assert (project / sub / "skills" / name / "SKILL.md").is_file()
    assert not (tmp_path / "home" / ".claude").exists()
    assert (project / "AGENTS.md").exists() == (target == "codex")


def test_codex_block_is_appended_kept_once_and_removed_byte_exactly(tmp_path: Path) -> None:
    project = tmp_path / "checkout"
    (project / ".git").mkdir(parents=True)
    original = b"# Checkout\n\nRun `make test` before pushing.\n"
    (project / "AGENTS.md").write_bytes(original)
    h = host(tmp_path)
    changes = {c.item: c for c in install("codex", h, project, clock=CLOCK)}
    block = changes["AGENTS.md"]
    assert block.action == "added" and block.backup == str(project / "AGENTS.md.bak.1800000000")
    text = (project / "AGENTS.md").read_text(encoding="utf-8")
    assert text.startswith(original.decode()) and text.count(BLOCK_BEGIN) == 1
    assert '`"checkout"`' in text and "{project}" not in text
    assert {c.action for c in install("codex", h, project, clock=CLOCK)} == {"unchanged"}
    # a stale block (an older release) is replaced in place, text after it kept
    stale = text.replace("## Memory (velesdb-memory)", "## Memory (old)") + "\nMore rules.\n"
    (project / "AGENTS.md").write_text(stale, encoding="utf-8")
    assert install("codex", h, project, clock=CLOCK)[-1].action == "updated"
    replaced = (project / "AGENTS.md").read_text(encoding="utf-8")
    assert replaced == text + "\nMore rules.\n"
    (project / "AGENTS.md").write_text(text, encoding="utf-8")
    assert install("codex", h, project, uninstall=True, clock=CLOCK)[-1].action == "removed"
    assert (project / "AGENTS.md").read_bytes() == original


def test_codex_block_in_a_new_file_goes_with_the_file(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    h = host(tmp_path)
    assert install("codex", h, project)[-1].action == "added"
    assert (project / "AGENTS.md").read_text(encoding="utf-8").startswith(BLOCK_BEGIN)
    assert install("codex", h, project, uninstall=True)[-1].action == "removed"
    assert not (project / "AGENTS.md").exists()


@pytest.mark.integration
def test_a_begin_marker_without_its_end_is_refused_and_left_untouched(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    broken = f"# P\n{BLOCK_BEGIN}\nhalf a block\n".encode()
    (project / "AGENTS.md").write_bytes(broken)
    result = cli(tmp_path, "--target", "codex", "--project", str(project))
    assert result.returncode == 1 and " refused " in result.stdout
    assert (project / "AGENTS.md").read_bytes() == broken
    assert BLOCK_END not in broken.decode()


@pytest.mark.integration
def test_a_missing_project_directory_is_refused(tmp_path: Path) -> None:
    result = cli(tmp_path, "--project", str(tmp_path / "nope"))
    assert result.returncode == 2 and "is not a directory" in result.stdout
    assert not (tmp_path / ".claude").exists()

"""Copy the shipped skills into an agent's skills directory, and the Codex ``AGENTS.md`` block.

Where each agent looks (user scope, or ``<project>`` with ``--project``):

    claude    ~/.claude/skills/<name>/  ($CLAUDE_CONFIG_DIR/skills when set)  <project>/.claude/skills/<name>/
    opencode  ~/.config/opencode/skills/<name>/  ($XDG_CONFIG_HOME)          <project>/.opencode/skills/<name>/
    codex     ~/.agents/skills/<name>/                                         <project>/.agents/skills/<name>/
              and, with --project, a block in <project>/AGENTS.md between marker comments

Every step is idempotent: a file already holding the shipped bytes is not written. Uninstall
removes only the files we ship (a folder left empty goes too) and only our ``AGENTS.md`` block.
An existing ``AGENTS.md`` is backed up (``<file>.bak.<epoch>``) before we change it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from velesmem.agents import SKILL_NAMES
from velesmem.agents.project import project_name
from velesmem.clients.files import atomic_write, backup, read_bytes
from velesmem.clients.host import Host

CLAUDE, OPENCODE, CODEX = "claude", "opencode", "codex"
TARGETS = (CLAUDE, OPENCODE, CODEX)
AGENTS_MD = "AGENTS.md"
BLOCK_BEGIN = ("<!-- velesdb-memory:begin — written by `velesdb-memory skills install --target codex`;"
               " `--uninstall` removes it -->")
BLOCK_END = "<!-- velesdb-memory:end -->"
BEGIN_PREFIX = "<!-- velesdb-memory:begin"
PROJECT_PLACEHOLDER = "{project}"


@dataclass(frozen=True)
class Change:
    """What one step did: ``action`` is added, updated, unchanged, removed, absent or refused."""

    target: str
    item: str
    action: str
    path: str
    detail: str = ""
    backup: str | None = None

    def line(self) -> str:
        parts = [f"{self.target:<9} {self.item:<26} {self.action:<9} {self.path}"]
        if self.backup:
            parts.append(f"(backup: {self.backup})")
        if self.detail:
            parts.append(f"— {self.detail}")
        return " ".join(parts)


def shipped_files(name: str) -> dict[str, bytes]:
    """The files of one shipped skill, relative path → bytes (read from the installed package)."""
    root = resources.files("velesmem.agents") / "skills" / name
    out: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif not child.name.startswith("."):
                out[rel] = child.read_bytes()

    walk(root, "")
    if "SKILL.md" not in out:
        raise FileNotFoundError(f"the {name} skill is not in this installation of velesmem")
    return out


def agents_md_snippet(project: str) -> str:
    """The Codex instructions block body, naming the project."""
    text = (resources.files("velesmem.agents") / "codex" / AGENTS_MD).read_text(encoding="utf-8")
    return text.replace(PROJECT_PLACEHOLDER, project)


def skills_dir(target: str, host: Host, project: Path | None = None) -> Path:
    """The directory that holds one folder per skill for ``target``."""
    if project is not None:
        sub = {CLAUDE: ".claude", OPENCODE: ".opencode", CODEX: ".agents"}[target]
        return project / sub / "skills"
    if target == CLAUDE:
        config = host.env.get("CLAUDE_CONFIG_DIR", "")
        return Path(config) / "skills" if config else Path(host.home) / ".claude" / "skills"
    if target == OPENCODE:
        return Path(str(host.xdg_config())) / "opencode" / "skills"
    if target == CODEX:
        return Path(host.home) / ".agents" / "skills"
    raise ValueError(f"unknown target {target!r}: one of {', '.join(TARGETS)}")


def install(target: str, host: Host | None = None, project: Path | None = None, *,
            uninstall: bool = False, clock: Callable[[], float] = time.time) -> list[Change]:
    """Install (or remove) both skills for ``target``; for Codex with a project, the
    ``AGENTS.md`` block too. One Change per skill (and per file edited)."""
    host = host or Host.current()
    root = skills_dir(target, host, project)
    changes = [(_remove_skill if uninstall else _copy_skill)(target, root, name)
               for name in SKILL_NAMES]
    if target == CODEX and project is not None:
        path = project / AGENTS_MD
        changes.append(_remove_block(target, path, clock) if uninstall
                       else _write_block(target, path, project_name(project), clock))
    return changes


def _copy_skill(target: str, root: Path, name: str) -> Change:
    folder = root / name
    files = shipped_files(name)
    existed = (folder / "SKILL.md").exists()
    written = 0
    for rel, data in files.items():
        path = folder / rel
        if read_bytes(path) != data:
            atomic_write(path, data)
            written += 1
    action = "unchanged" if written == 0 else ("updated" if existed else "added")
    return Change(target, name, action, str(folder))


def _remove_skill(target: str, root: Path, name: str) -> Change:
    folder = root / name
    removed = 0
    for rel in shipped_files(name):
        path = folder / rel
        if path.is_file():
            path.unlink()
            removed += 1
    kept = _prune_empty(folder, root)
    detail = f"kept {folder}: it holds files we did not ship" if kept else ""
    return Change(target, name, "removed" if removed else "absent", str(folder), detail)


def _prune_empty(folder: Path, stop: Path) -> bool:
    """Remove ``folder`` and its sub-directories when empty; True when something stays."""
    if not folder.is_dir():
        return False
    for sub in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    if any(folder.iterdir()):
        return True
    folder.rmdir()
    return False


def _block(project: str) -> str:
    return f"{BLOCK_BEGIN}\n{agents_md_snippet(project).rstrip()}\n{BLOCK_END}\n"


def _find_block(text: str) -> tuple[int, int] | None:
    """(start, end) of our block, end past its end marker's line; None when absent; ValueError
    when a begin marker has no end marker after it."""
    start = text.find(BEGIN_PREFIX)
    if start < 0:
        return None
    end = text.find(BLOCK_END, start)
    if end < 0:
        raise ValueError("its velesdb-memory begin marker has no end marker")
    end += len(BLOCK_END)
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return start, end


def _decode(path: Path, raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _write_block(target: str, path: Path, project: str, clock: Callable[[], float]) -> Change:
    block = _block(project)
    raw = read_bytes(path)
    if raw is None:
        atomic_write(path, block.encode("utf-8"))
        return Change(target, AGENTS_MD, "added", str(path))
    text = _decode(path, raw)
    if text is None:
        return Change(target, AGENTS_MD, "refused", str(path), "not UTF-8 text; left untouched")
    try:
        span = _find_block(text)
    except ValueError as exc:
        return Change(target, AGENTS_MD, "refused", str(path), f"{exc}; left untouched")
    if span is not None:
        new = text[:span[0]] + block + text[span[1]:]
        action = "updated"
    else:
        new = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
        action = "added"
    if new == text:
        return Change(target, AGENTS_MD, "unchanged", str(path))
    saved = backup(path, clock)
    atomic_write(path, new.encode("utf-8"))
    return Change(target, AGENTS_MD, action, str(path), backup=str(saved))


def _remove_block(target: str, path: Path, clock: Callable[[], float]) -> Change:
    raw = read_bytes(path)
    text = None if raw is None else _decode(path, raw)
    if text is None:
        return Change(target, AGENTS_MD, "absent", str(path))
    try:
        span = _find_block(text)
    except ValueError as exc:
        return Change(target, AGENTS_MD, "refused", str(path), f"{exc}; left untouched")
    if span is None:
        return Change(target, AGENTS_MD, "absent", str(path))
    before, after = text[:span[0]], text[span[1]:]
    if before.endswith("\n\n"):  # the blank line we put before the block
        before = before[:-1]
    rest = before + after
    saved = backup(path, clock)
    if rest.strip():
        atomic_write(path, rest.encode("utf-8"))
    else:
        path.unlink()
    return Change(target, AGENTS_MD, "removed", str(path), backup=str(saved))

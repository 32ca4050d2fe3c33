"""Claude Code's session hooks in ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR`` when set).

``wire`` adds, for each of SessionStart, PreCompact and Stop, one command hook running
``<python> -P -m velesmem hook <event>`` (``-P``: never a velesmem found in the project
directory the hook runs in)::

    {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "… hook session-start",
                                            "timeout": 10}]}], "PreCompact": […], "Stop": […]}}

The merge follows the other client edits (``velesmem.clients.files``): every other key, event
and hook is kept as it is; a file that is not a JSON object is refused and left untouched; a
change is backed up first (``<file>.bak.<epoch>``); a re-run writes nothing. Our entries are
recognised by their command (``… velesmem hook <event>`` or ``… velesdb-memory hook <event>``):
an entry of ours pointing at another Python is updated in place, and ``--uninstall`` removes
exactly those, with any group or event list they leave empty.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any

from velesmem.clients.files import (ConfigRefused, atomic_write, backup, dump_json,
                                    parse_json_object, read_bytes, UTF8_BOM)
from velesmem.clients.host import Host

HOOK_EVENTS = {"SessionStart": "session-start", "PreCompact": "pre-compact", "Stop": "stop"}
HOOK_TIMEOUT_S = 10  # Claude Code's own limit for our command; the hook gives up after ~2 s
OURS = re.compile(r"(?:velesmem|velesdb-memory)(?:\.exe)?[\"']?\s+hook\s+"
                  r"(?:session-start|pre-compact|stop)\s*$")


def settings_path(host: Host) -> PurePath:
    config = host.env.get("CLAUDE_CONFIG_DIR", "")
    return (host.pure(config) if config else host.home_path(".claude")) / "settings.json"


def claude_code_present(host: Host, which: Callable[[str], str | None]) -> bool:
    """Claude Code is installed: its CLI is on PATH, or a file it writes exists (``~/.claude.json``,
    its settings). A bare ``~/.claude`` is no proof: ``skills install`` creates ``~/.claude/skills``."""
    return (which("claude") is not None or Path(str(settings_path(host))).exists()
            or Path(str(host.home_path(".claude.json"))).exists())


def hook_command(python: str, event: str, windows: bool = False) -> str:
    quoted = f'"{python}"' if windows else shlex.quote(python)
    return f"{quoted} -P -m velesmem hook {event}"


def hook_entry(python: str, event: str, windows: bool = False) -> dict[str, Any]:
    return {"type": "command", "command": hook_command(python, event, windows),
            "timeout": HOOK_TIMEOUT_S}


def is_ours(hook: Any) -> bool:
    return (isinstance(hook, dict) and isinstance(hook.get("command"), str)
            and OURS.search(hook["command"]) is not None)


def _event_groups(path: Path, hooks: dict[str, Any], event: str) -> list[Any]:
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise ConfigRefused(f"{path}: hooks.{event} is not a list; left untouched — fix it by hand")
    return groups


def _hooks_object(path: Path, data: dict[str, Any], create: bool) -> dict[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise ConfigRefused(f"{path}: 'hooks' is not an object; left untouched — fix it by hand")
    return hooks


def merge_hooks(path: Path, data: dict[str, Any], python: str, windows: bool = False) -> str:
    """Put our three hooks into ``data``: added, updated or unchanged."""
    hooks = _hooks_object(path, data, create=True)
    assert hooks is not None
    verdicts = []
    for event, name in HOOK_EVENTS.items():
        wanted = hook_entry(python, name, windows)
        groups = _event_groups(path, hooks, event)
        found = [(g, i) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                 for i, h in enumerate(g["hooks"]) if is_ours(h)]
        if len(found) == 1 and found[0][0]["hooks"][found[0][1]] == wanted:
            verdicts.append("unchanged")
            continue
        if found:  # replace the first in place, drop duplicates
            first_group, first_index = found[0]
            first_group["hooks"][first_index] = wanted
            for group, _ in found[1:]:
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
            groups[:] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            verdicts.append("updated")
        else:
            groups.append({"hooks": [wanted]})
            verdicts.append("added")
    if all(v == "unchanged" for v in verdicts):
        return "unchanged"
    return "added" if all(v == "added" for v in verdicts) else "updated"


def remove_hooks(path: Path, data: dict[str, Any]) -> bool:
    """Remove every hook of ours (and what that leaves empty); True when something went."""
    hooks = _hooks_object(path, data, create=False)
    if hooks is None:
        return False
    removed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list) \
                    and any(is_ours(h) for h in group["hooks"]):
                removed = True
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
                if not group["hooks"]:
                    continue
            kept_groups.append(group)
        if kept_groups != groups:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if removed and not hooks:
        del data["hooks"]
    return removed


def wire_hooks(path: Path, python: str, *, uninstall: bool = False, windows: bool = False,
               clock: Callable[[], float] = time.time) -> tuple[str, Path | None]:
    """Merge (or remove) our hooks in ``path``: (action, backup path or None)."""
    raw = read_bytes(path)
    if raw is None:
        if uninstall:
            return "absent", None
        data: dict[str, Any] = {}
        merge_hooks(path, data, python, windows)
        atomic_write(path, dump_json(data))
        return "added", None
    data = parse_json_object(path, raw)
    if uninstall:
        if not remove_hooks(path, data):
            return "absent", None
        action = "removed"
    else:
        action = merge_hooks(path, data, python, windows)
        if action == "unchanged":
            return action, None
    saved = backup(path, clock)
    atomic_write(path, dump_json(data, bom=raw.startswith(UTF8_BOM)))
    return action, saved

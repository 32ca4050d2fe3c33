"""Non-destructive edits of one ``[mcp_servers.<name>]`` table in a TOML config (Codex).

Python reads TOML (``tomllib``) but has no writer, and a rewrite would lose the user's comments
and layout anyway. So the edit is textual: our table's lines are replaced, removed or appended,
and the result is re-parsed to prove that every other key kept its exact value before anything
is written. Same backup / atomic-write / refusal rules as the JSON files.
"""

from __future__ import annotations

import copy
import json
import re
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from velesmem.clients.files import ConfigRefused, atomic_write, backup, read_bytes

TABLE = "mcp_servers"
_ANY_HEADER = re.compile(r"^\s*\[")


def _header_re(name: str) -> re.Pattern[str]:
    quoted = rf"(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')"
    return re.compile(rf"^\s*\[\s*{TABLE}\s*\.\s*{quoted}\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$")


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigRefused(f"{path} is not valid TOML ({exc}); left untouched — fix it by hand") from None


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigRefused(f"{path} is not UTF-8 text; left untouched") from None


def _entry_of(data: dict[str, Any], name: str) -> Any:
    servers = data.get(TABLE)
    return servers.get(name) if isinstance(servers, dict) else None


def _without(data: dict[str, Any], name: str) -> dict[str, Any]:
    rest = copy.deepcopy(data)
    servers = rest.get(TABLE)
    if isinstance(servers, dict):
        servers.pop(name, None)
        if not servers:
            del rest[TABLE]
    return rest


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table; keys quoted (a JSON string is a TOML key)
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def render_table(name: str, entry: dict[str, Any]) -> list[str]:
    """Our table as TOML lines (scalars, lists and inline tables)."""
    return [f"[{TABLE}.{name}]"] + [f"{key} = {_value(val)}" for key, val in entry.items()]


def _split(lines: list[str], name: str) -> tuple[int, int] | None:
    """The [start, end) line range of our table and its sub-tables, or None."""
    header = _header_re(name)
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not (_ANY_HEADER.match(lines[end]) and not header.match(lines[end])):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # keep the blank line that separated us from the next table
    return start, end


def get_toml_entry(path: Path, name: str) -> Any:
    raw = read_bytes(path)
    return None if raw is None else _entry_of(_parse(path, _decode(path, raw)), name)


def _commit(path: Path, old: dict[str, Any], lines: list[str], name: str, expected: Any,
            clock: Callable[[], float]) -> Path:
    """Re-parse the edited text, prove only our table changed, then back up and write."""
    new_text = "\n".join(lines).rstrip("\n") + "\n" if any(line.strip() for line in lines) else ""
    new = _parse(path, new_text)
    if _without(new, name) != _without(old, name) or _entry_of(new, name) != expected:
        raise ConfigRefused(f"{path}: editing [{TABLE}.{name}] would change other keys; edit it by hand")
    saved = backup(path, clock)
    atomic_write(path, new_text.encode("utf-8"))
    return saved


def upsert_toml_entry(path: Path, name: str, entry: dict[str, Any],
                      clock: Callable[[], float] = time.time) -> tuple[str, Path | None]:
    """Make ``[mcp_servers.<name>]`` equal ``entry``; (added|updated|unchanged, backup or None)."""
    raw = read_bytes(path)
    block = render_table(name, entry)
    if raw is None:
        atomic_write(path, ("\n".join(block) + "\n").encode("utf-8"))
        return "added", None
    text = _decode(path, raw)
    old = _parse(path, text)
    previous = _entry_of(old, name)
    if previous == entry:
        return "unchanged", None
    lines = text.splitlines()
    span = _split(lines, name)
    if span is None:
        if previous is not None:
            raise ConfigRefused(f"{path}: {TABLE}.{name} is defined inline, not as a table; edit it by hand")
        lines = lines + ([""] if lines and lines[-1].strip() else []) + block
    else:
        lines = lines[: span[0]] + block + lines[span[1]:]
    saved = _commit(path, old, lines, name, entry, clock)
    return ("added" if previous is None else "updated"), saved


def remove_toml_entry(path: Path, name: str,
                      clock: Callable[[], float] = time.time) -> tuple[str, Path | None]:
    """Delete ``[mcp_servers.<name>]`` only; (removed|absent, backup or None)."""
    raw = read_bytes(path)
    if raw is None:
        return "absent", None
    text = _decode(path, raw)
    old = _parse(path, text)
    if _entry_of(old, name) is None:
        return "absent", None
    lines = text.splitlines()
    span = _split(lines, name)
    if span is None:
        raise ConfigRefused(f"{path}: {TABLE}.{name} is defined inline, not as a table; edit it by hand")
    before, after = lines[: span[0]], lines[span[1]:]
    while before and not before[-1].strip() and (not after or not after[0].strip()):
        before.pop()
    return "removed", _commit(path, old, before + after, name, None, clock)

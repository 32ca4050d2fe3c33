"""YAML frontmatter of a Markdown note (basic-memory notes, Claude Code's memory notes), read
with a safe loader and made JSON-ready so it can travel as metadata."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import yaml

from velesmem.importers.records import CorruptInput

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def jsonable(value: object) -> Any:
    """YAML's dates, times and binary values as strings, so frontmatter travels as JSON."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def frontmatter(lines: list[str], rel: str) -> tuple[dict[str, Any], int]:
    """The frontmatter mapping of a note and the index of its body's first line; CorruptInput
    naming ``rel`` and the line when it is unclosed, not YAML or not a mapping."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise CorruptInput(f"{rel}:1", "frontmatter is opened by '---' and never closed")
    try:
        loaded = yaml.load("\n".join(lines[1:end]), Loader=LOADER)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorruptInput(f"{rel}:{line}", f"frontmatter is not YAML ({problem})") from None
    if loaded is None:
        return {}, end + 1
    if not isinstance(loaded, dict):
        raise CorruptInput(f"{rel}:2", "frontmatter is not a mapping of keys to values")
    return jsonable(loaded), end + 1

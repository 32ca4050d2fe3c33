"""Working contexts: a session's distilled state, validated, with every id as a decimal string."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from velesmem.context.model import parse_u64
from velesmem.errors import InvalidInput
from velesmem.limits import MAX_CONTEXT_NAME_BYTES, MAX_WORKING_CONTEXT_BYTES

LIST_FIELDS = (
    "active_constraints",
    "verified_facts",
    "open_hypotheses",
    "decisions",
    "exact_evidence",
    "pending_actions",
)
ID_KEYS = frozenset({"fragment_id", "memory_id"})


def check_name(value: object, field: str) -> str:
    """A project or session name: a non-empty string, no control characters, capped."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise InvalidInput(f"{field} must not contain control characters")
    if len(value.encode("utf-8")) > MAX_CONTEXT_NAME_BYTES:
        raise InvalidInput(f"{field} is over its {MAX_CONTEXT_NAME_BYTES}-byte cap")
    return value


def _ids_to_strings(value: Any, where: str) -> Any:
    """Rewrite every nested fragment_id / memory_id into its decimal-string form."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, v in value.items():
            if key in ID_KEYS and v is not None:
                out[key] = str(parse_u64(v, f"{where}.{key}"))
            else:
                out[key] = _ids_to_strings(v, f"{where}.{key}")
        return out
    if isinstance(value, list):
        return [_ids_to_strings(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def normalize_working(value: object) -> dict[str, Any]:
    """Validate a WorkingContext: known fields only, not empty, ≤ 1 MiB, ids as strings."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput("working must be a WorkingContext object") from None
    if not isinstance(value, Mapping):
        raise InvalidInput("working must be a WorkingContext object")
    unknown = sorted(set(value) - {"goal", *LIST_FIELDS})
    if unknown:
        raise InvalidInput(
            f"working has unknown field(s) {', '.join(unknown)}; allowed: goal, {', '.join(LIST_FIELDS)}"
        )
    out: dict[str, Any] = {}
    goal = value.get("goal")
    if goal is not None:
        if not isinstance(goal, str):
            raise InvalidInput("working.goal must be a string")
        out["goal"] = goal
    for name in LIST_FIELDS:
        items = value.get(name)
        if items is None:
            items = []
        if not isinstance(items, list):
            raise InvalidInput(f"working.{name} must be an array")
        entries = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                item = {"text": item}  # a bare string is shorthand for {"text": ...}
            if not isinstance(item, Mapping):
                raise InvalidInput(f"working.{name}[{i}] must be an object (or a string)")
            entries.append(item)
        out[name] = _ids_to_strings(entries, f"working.{name}")
    if not (out.get("goal") or "").strip() and not any(out[name] for name in LIST_FIELDS):
        raise InvalidInput("working is empty: give a goal or at least one entry to save")
    size = len(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_WORKING_CONTEXT_BYTES:
        raise InvalidInput(
            f"working is {size} bytes serialized; the cap is {MAX_WORKING_CONTEXT_BYTES} (1 MiB)"
        )
    return out

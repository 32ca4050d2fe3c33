"""Input checks shared by the memory operations: every refusal is an InvalidInput raised before
anything is written, with a message that names the field, the limit and the value's size."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from typing import Any

from velesmem import limits
from velesmem.errors import InvalidInput
from velesmem.ids import parse_id

DATE_KEY = "_veles_date"
# The name of the bearer token whose request wrote the fact (docs/auth.md): set by the daemon,
# refused from callers, shown (and filterable) on read.
AUTHOR_KEY = "_veles_author"
# The source an imported fact came from (``import --from``, docs/import.md): an ordinary key,
# shown and filterable; memory_status counts live facts per value.
IMPORTED_FROM_KEY = "imported_from"
RESERVED_PREFIX = "_veles_"
_FIELD = re.compile(r"[A-Za-z0-9_]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_reserved(key: str) -> bool:
    """``content`` and every ``_veles_*`` key except ``_veles_date`` are reserved."""
    return key == "content" or (key.startswith(RESERVED_PREFIX) and key != DATE_KEY)


def is_hidden(key: str) -> bool:
    """Keys recall and list_memories leave out: the reserved ones except ``_veles_author``,
    which is read-only (shown and filterable, never written by a caller)."""
    return is_reserved(key) and key != AUTHOR_KEY


def visible_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata as recall shows it: reserved keys stripped, ``_veles_date`` and
    ``_veles_author`` kept."""
    return {k: v for k, v in metadata.items() if not is_hidden(k)}


def dumps(value: Any) -> str:
    """Canonical JSON (sorted keys, compact, no NaN) used for storage and size checks."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def text(value: object, field: str, max_bytes: int, *, allow_empty: bool = False) -> str:
    """A string within ``max_bytes`` of UTF-8 (and non-blank unless ``allow_empty``)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidInput(f"{field} is {size} bytes, over the {max_bytes}-byte cap")
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field} must not be empty or whitespace only")
    return value


def fact_text(value: object) -> str:
    """The trimmed fact; the 2048-byte cap applies to what is stored and embedded."""
    if not isinstance(value, str):
        raise InvalidInput(f"fact must be a string, got {type(value).__name__}")
    trimmed = value.strip()
    if not _CONTROL.sub("", trimmed).strip():
        raise InvalidInput("fact must not be empty, whitespace or control characters only")
    size = len(trimmed.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_EMBEDDABLE_TEXT_BYTES:
        raise InvalidInput(
            f"fact is {size} bytes, over the {limits.MAX_EMBEDDABLE_TEXT_BYTES}-byte cap "
            "(MAX_EMBEDDABLE_TEXT_BYTES); split it into smaller facts, it is never truncated")
    _utf8(trimmed, "fact")
    return trimmed


def _utf8(value: str, field: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid Unicode (lone surrogate)") from None


def count(value: object, field: str, *, default: int, low: int, high: int) -> int:
    """An integer in [low, high] (None → default); booleans and floats are refused."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be between {low} and {high}, got {value}")
    return value


def capped(value: object, field: str, *, default: int, low: int, cap: int) -> int:
    """An integer ≥ ``low`` (None → default), clamped to ``cap`` as the contract's "capped at"
    says; booleans, floats and values below ``low`` are refused."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer, got {type(value).__name__}")
    if value < low:
        raise InvalidInput(f"{field} must be at least {low}, got {value}")
    return min(value, cap)


def finite(value: object, field: str, *, default: float, low: float = -math.inf) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{field} must be a number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out) or out < low:
        raise InvalidInput(f"{field} must be a finite number >= {low}, got {value}")
    return out


def ttl(value: object, default: int | None) -> int | None:
    """ttl_seconds: None → the configured default; otherwise a positive integer (0 refused)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"ttl_seconds must be a positive integer, got {type(value).__name__}")
    if not 1 <= value <= limits.MAX_TTL_SECONDS:
        raise InvalidInput(f"ttl_seconds must be between 1 and {limits.MAX_TTL_SECONDS} "
                           f"(omit it for a permanent fact), got {value}")
    return value


def metadata(value: object, *, today: int,
             author: str | None = None) -> tuple[dict[str, Any], str]:
    """User metadata checked (object, reserved keys, size, ``_veles_date``), auto-dated and,
    when the caller authenticated with a token, stamped with its ``author``; returns it with its
    canonical JSON."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"metadata must be an object, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidInput(f"metadata keys must be strings, got {key!r}")
        if is_reserved(key):
            raise InvalidInput(f"metadata key {key!r} is reserved (content and _veles_* keys "
                               f"other than {DATE_KEY} are refused)")
    out = dict(value)
    # An explicit date is always respected, even one that is no YYYYMMDD integer (it then never
    # matches a numeric date range).
    out.setdefault(DATE_KEY, today)
    if author is not None:
        out[AUTHOR_KEY] = author
    try:
        encoded = dumps(out)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata is not JSON-serializable: {exc}") from None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_METADATA_BYTES:
        raise InvalidInput(f"metadata is {size} bytes serialized, over the "
                           f"{limits.MAX_METADATA_BYTES}-byte cap (MAX_METADATA_BYTES)")
    _utf8(encoded, "metadata")
    return out, encoded


def parse_date(value: object) -> _dt.date | None:
    """The date of a YYYYMMDD integer, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 10000101 <= value <= 99991231:
        return None
    try:
        return _dt.date(value // 10000, value // 100 % 100, value % 100)
    except ValueError:
        return None


def relation(value: object) -> str:
    """A relation label: non-empty, at most 512 bytes, no ASCII control characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"relation must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput("relation must not be empty")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_RELATION_BYTES:
        raise InvalidInput(f"relation is {size} bytes, over the {limits.MAX_RELATION_BYTES}-byte "
                           "cap")
    if _CONTROL.search(value):
        raise InvalidInput("relation must not contain ASCII control characters")
    _utf8(value, "relation")
    return value


def links(value: object, source: int) -> list[tuple[int, str]]:
    """remember's links as (target, relation) pairs, each checked like relate."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"links must be an array, got {type(value).__name__}")
    if len(value) > limits.MAX_LINKS_PER_FACT:
        raise InvalidInput(f"links holds {len(value)} entries, over the "
                           f"{limits.MAX_LINKS_PER_FACT} cap")
    out: list[tuple[int, str]] = []
    for n, link in enumerate(value):
        if not isinstance(link, dict):
            raise InvalidInput(f"links[{n}] must be an object {{target, relation}}")
        unknown = set(link) - {"target", "relation"}
        if unknown or "target" not in link or "relation" not in link:
            raise InvalidInput(f"links[{n}] must have exactly the keys target and relation")
        target = parse_id(link["target"], f"links[{n}].target")
        rel = relation(link["relation"])
        if target == source:
            raise InvalidInput(f"links[{n}] points the fact at itself (from = to)")
        out.append((target, rel))
    return out


def field_name(value: object, where: str) -> str:
    """A metadata field usable in a predicate: ASCII letters, digits, ``_``; not reserved."""
    if not isinstance(value, str) or not _FIELD.fullmatch(value):
        raise InvalidInput(f"{where} must be a field name of ASCII letters, digits and _, "
                           f"got {value!r}")
    if len(value) > limits.MAX_FIELD_NAME_BYTES:
        raise InvalidInput(f"{where} is over the {limits.MAX_FIELD_NAME_BYTES}-byte cap")
    if is_hidden(value):
        raise InvalidInput(f"{where} {value!r} is reserved and cannot be filtered on")
    return value


def query(value: object, field: str = "query") -> str:
    return text(value, field, limits.MAX_QUERY_BYTES)


def boolean(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be a boolean, got {type(value).__name__}")
    return value


def entity_name(value: object) -> str:
    """An entity name as the graph keys it: trimmed and lowercased, non-empty, within the cap."""
    if not isinstance(value, str):
        raise InvalidInput(f"name must be a string, got {type(value).__name__}")
    name = value.strip().lower()
    if not name:
        raise InvalidInput("name must not be empty")
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_ENTITY_NAME_BYTES:
        raise InvalidInput(f"name is {size} bytes, over the {limits.MAX_ENTITY_NAME_BYTES}-byte "
                           "cap")
    _utf8(name, "name")
    return name

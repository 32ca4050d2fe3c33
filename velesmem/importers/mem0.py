"""mem0 / OpenMemory: a JSON export of their memories.

Two shapes are read, told apart by their top level:

- mem0's own (``Memory.get_all`` / ``MemoryClient.get_all`` as returned and saved, which is how
  mem0 exports): ``{"results": [...]}`` or the bare list, each item ``{"id", "memory", "hash",
  "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id", "actor_id", "role",
  "categories"}``;
- OpenMemory's backup (``memories.json`` of its export zip): ``{"user", "apps", "categories",
  "memories": [{"id", "content", "metadata", "state", "created_at", "updated_at",
  "category_ids", "app_id", ...}], ...}``.

Each memory becomes a fact: its text; its own metadata, ids, categories (by name), app and
times as metadata; its creation time as ``_veles_date``. Its user and agent become entity hubs
(``about`` links), so ``why`` walks from one memory to the others of the same person or agent.
An OpenMemory memory in state ``deleted`` is skipped. Input that is not JSON, or an item that
is not a memory of these shapes, refuses the whole file naming the line or the item.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from velesmem import limits
from velesmem.importers.records import CorruptInput, Entity, Fact, Link, Record, Skipped

ABOUT = "about"
IDS = ("user_id", "agent_id", "run_id", "actor_id", "role")  # mem0's promoted payload keys
HUBS = ("user_id", "agent_id")  # ids that name who a memory is about: entity hubs
DELETED = "deleted"


def _load(path: Path) -> object:
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CorruptInput(name, f"cannot be read ({exc.strerror})") from None
    if size > limits.MAX_IMPORT_LINE_BYTES:
        raise CorruptInput(name, f"is {size:,} bytes, over the {limits.MAX_IMPORT_LINE_BYTES:,}"
                                 "-byte cap of one JSON document (MAX_IMPORT_LINE_BYTES)")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptInput(name, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CorruptInput(name, f"cannot be read ({exc.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptInput(f"{name}:{exc.lineno}", f"not JSON ({exc.msg} at column "
                                                   f"{exc.colno})") from None
    except RecursionError:
        raise CorruptInput(name, "JSON nested too deeply to read") from None


def _time(value: object, where: str, name: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorruptInput(where, f"{name} is not an ISO time: {value!r}")
    try:
        parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise CorruptInput(where, f"{name} is not an ISO time: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.UTC)
    return parsed.timestamp()


def _string(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise CorruptInput(where, f"{name!r} must be a string, got {type(value).__name__}")
    return value


def _object(value: object, name: str, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CorruptInput(where, f"{name!r} must be an object, got {type(value).__name__}")
    return value


def _fact(key: str, text: str, where: str, own: dict[str, Any], extra: dict[str, Any],
          created: float | None, updated: float | None) -> Fact:
    """The memory's own metadata first; a key of it named like one of ``extra`` kept renamed."""
    meta = {(f"source_{k}" if k in extra else k): v for k, v in own.items()}
    return Fact(key, text, where, {**meta, **extra}, created, updated)


def _hubs(fact: Fact, ids: Mapping[str, object], seen: set[str]) -> Iterator[Record]:
    """The memory's user and agent as hubs (each yielded once per file) and its links."""
    for name in HUBS:
        value = ids.get(name)
        if isinstance(value, str) and value.strip():
            key = f"mem0-{name}:{value}"
            if key not in seen:
                seen.add(key)
                yield Entity(key, value, fact.where, {"mem0": name.removesuffix("_id")})
            yield Link(fact.key, key, ABOUT, fact.where)


def _mem0(items: list[object], name: str) -> Iterator[Record]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"{name} results[{i}]"
        if not isinstance(item, dict):
            raise CorruptInput(where, "not a memory object")
        ident = _string(item, "id", where)
        where = f"{where} (id {ident})"
        text = _string(item, "memory", where)
        created = _time(item.get("created_at"), where, "created_at")
        updated = _time(item.get("updated_at"), where, "updated_at")
        extra: dict[str, Any] = {"mem0_id": ident}
        for key in (*IDS, "hash", "categories", "expiration_date", "created_at", "updated_at"):
            if item.get(key) is not None:
                extra[key] = item[key]
        fact = _fact(f"mem0:{ident}", text, where, _object(item.get("metadata"), "metadata",
                                                           where), extra, created, updated)
        yield fact
        yield from _hubs(fact, item, seen)


def _names(listed: object, name: str, where: str) -> dict[str, str]:
    """``id -> name`` of OpenMemory's apps or categories."""
    if listed is None:
        return {}
    if not isinstance(listed, list):
        raise CorruptInput(where, f"{name!r} must be a list")
    out: dict[str, str] = {}
    for i, entry in enumerate(listed):
        at = f"{where} {name}[{i}]"
        if not isinstance(entry, dict):
            raise CorruptInput(at, "not an object")
        out[_string(entry, "id", at)] = _string(entry, "name", at)
    return out


def _openmemory(doc: dict[str, Any], name: str) -> Iterator[Record]:
    memories = doc["memories"]
    if not isinstance(memories, list):
        raise CorruptInput(name, "'memories' must be a list")
    user = _object(doc.get("user"), "user", name)
    user_id = user.get("user_id")
    apps = _names(doc.get("apps"), "apps", name)
    categories = _names(doc.get("categories"), "categories", name)
    seen: set[str] = set()
    for i, item in enumerate(memories):
        where = f"{name} memories[{i}]"
        if not isinstance(item, dict):
            raise CorruptInput(where, "not a memory object")
        ident = _string(item, "id", where)
        where = f"{where} (id {ident})"
        text = _string(item, "content", where)
        state = item.get("state", "active")
        if state == DELETED:
            yield Skipped(where, "deleted in OpenMemory (state 'deleted')")
            continue
        created = _time(item.get("created_at"), where, "created_at")
        updated = _time(item.get("updated_at"), where, "updated_at")
        cat_ids = item.get("category_ids") or []
        if not isinstance(cat_ids, list):
            raise CorruptInput(where, "'category_ids' must be a list")
        extra: dict[str, Any] = {"mem0_id": ident, "state": state}
        if isinstance(user_id, str):
            extra["user_id"] = user_id
        if item.get("app_id") in apps:
            extra["app"] = apps[item["app_id"]]
        if cat_ids:
            extra["categories"] = [categories.get(str(c), str(c)) for c in cat_ids]
        for key in ("created_at", "updated_at", "archived_at"):
            if item.get(key) is not None:
                extra[key] = item[key]
        fact = _fact(f"openmemory:{ident}", text, where,
                     _object(item.get("metadata"), "metadata", where), extra, created, updated)
        yield fact
        yield from _hubs(fact, {"user_id": user_id}, seen)


def read(path: Path) -> Iterator[Record]:
    """The memories of one mem0 or OpenMemory JSON export (see the module docstring)."""
    doc = _load(path)
    name = path.name
    if isinstance(doc, list):
        yield from _mem0(doc, name)
    elif isinstance(doc, dict) and isinstance(doc.get("results"), list):
        yield from _mem0(doc["results"], name)
    elif isinstance(doc, dict) and "memories" in doc:
        yield from _openmemory(doc, name)
    else:
        raise CorruptInput(name, "not a mem0 export: expected {\"results\": [...]}, a list of "
                                 "memories, or OpenMemory's {\"memories\": [...]}")

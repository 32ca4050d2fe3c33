"""Helpers for the MCP tests: walk advertised schemas, build valid sample calls, probe slots.

Everything here is driven by the live ``tools/list``, so a tool added later is walked for free.
A tool's *valid* sample arguments come from ``memory_samples`` below (the memory tools need ids of
facts that exist) or else from its module's ``EXAMPLES`` dict (``velesmem/mcp/tools/<mod>.py``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastmcp import Client
from mcp import MCPError

from velesmem.ids import fact_id
from velesmem.mcp.server import tool_modules

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TWO_53 = 2**53
TWO_63 = 2**63
U64_MAX = 2**64 - 1

# Result keys whose content is the caller's free-form data, never ids we mint.
FREE_FORM_KEYS = frozenset({"metadata", "attributes"})
# Slots deliberately untyped (any JSON scalar, compared type-strictly): (tool, slot path).
DELIBERATELY_UNTYPED = frozenset({("recall_where", "filters[].value")})
NON_STRING_SCALARS = ("integer", "number", "boolean")


# --- schema walking ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """One input slot: where it is (keys, ``None`` = first array element) and what it advertises."""

    tool: str
    keys: tuple[str | None, ...]
    schema: dict[str, Any]
    required: bool

    @property
    def name(self) -> str:
        return next(k for k in reversed(self.keys) if k is not None)

    @property
    def path(self) -> str:
        out = ""
        for key in self.keys:
            out += "[]" if key is None else (f".{key}" if out else key)
        return out

    @property
    def error_path(self) -> str:
        """The path as the server's ``error.data.fields`` names it (array index 0)."""
        return self.path.replace("[]", "[0]")

    @property
    def type(self) -> str | None:
        kind = self.schema.get("type")
        return kind if isinstance(kind, str) else None


def slots(tool: Any) -> Iterator[Slot]:
    """Every input slot of ``tool``, nested objects and arrays of objects included."""
    yield from _walk(tool.name, tool.input_schema, ())


def _walk(tool: str, schema: dict[str, Any], keys: tuple[str | None, ...]) -> Iterator[Slot]:
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        here = (*keys, name)
        yield Slot(tool, here, prop, name in required)
        if prop.get("type") == "object" and "properties" in prop:
            yield from _walk(tool, prop, here)
        items = prop.get("items")
        if (prop.get("type") == "array" and isinstance(items, dict)
                and items.get("type") == "object" and "properties" in items):
            yield from _walk(tool, items, (*here, None))


def is_id_name(name: str) -> bool:
    """Id-named slots and result keys: id, from, to, target, cursor, *_id (and ids, *_ids)."""
    return name in {"id", "from", "to", "target", "cursor"} or name.endswith("_id")


def is_ids_name(name: str) -> bool:
    return name == "ids" or name.endswith("_ids")


# --- result walking ----------------------------------------------------------------------------
def missing_twins(value: Any, where: str = "$") -> list[str]:
    """Every numeric id in a result that lacks its exact decimal-string ``*_str`` twin."""
    problems: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in FREE_FORM_KEYS:
                continue
            numeric_id = isinstance(item, int) and not isinstance(item, bool)
            if numeric_id and is_id_name(key) and value.get(f"{key}_str") != str(item):
                problems.append(f"{where}.{key}={item} has no {key}_str twin equal to {str(item)!r}")
            if (isinstance(item, list) and is_ids_name(key) and any(isinstance(i, int) for i in item)
                    and value.get(f"{key}_str") != [str(i) for i in item]):
                problems.append(f"{where}.{key} has no {key}_str twin")
            problems += missing_twins(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problems += missing_twins(item, f"{where}[{index}]")
    return problems


def count_ids(value: Any) -> int:
    """How many id-named numeric fields a result holds (to see the twin check saw something)."""
    if isinstance(value, dict):
        return sum((1 if is_id_name(k) and isinstance(v, int) and not isinstance(v, bool) else 0)
                   + (count_ids(v) if k not in FREE_FORM_KEYS else 0) for k, v in value.items())
    if isinstance(value, list):
        return sum(count_ids(v) for v in value)
    return 0


# --- calling -----------------------------------------------------------------------------------
@dataclass
class Outcome:
    result: dict[str, Any] | None = None
    error: MCPError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def wire_rejected(self, error_path: str) -> bool:
        """True when the call failed with -32602 naming ``error_path`` as a malformed field."""
        if self.error is None or self.error.error.code != INVALID_PARAMS:
            return False
        data = self.error.error.data or {}
        return error_path in data.get("fields", [])

    def describe(self) -> str:
        if self.error is None:
            return f"ok {json.dumps(self.result)[:200]}"
        e = self.error.error
        return f"error {e.code} {e.message!r} data={e.data}"


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Outcome:
    """Call over the low-level session so a JSON-RPC error surfaces as MCPError, never masked."""
    try:
        result = await client.session.call_tool(tool, arguments)
    except MCPError as exc:
        return Outcome(error=exc)
    assert not result.is_error, f"{tool} answered an isError tool result, not a JSON-RPC error: {result}"
    return Outcome(result=result.structured_content)


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    outcome = await call(client, tool, arguments)
    assert outcome.ok, f"{tool}({arguments}) failed: {outcome.describe()}"
    assert outcome.result is not None
    return outcome.result


def with_value(arguments: dict[str, Any], keys: tuple[str | None, ...], value: Any) -> dict[str, Any] | None:
    """A copy of ``arguments`` with the slot at ``keys`` set to ``value``; None if unreachable."""
    out = copy.deepcopy(arguments)
    node: Any = out
    for key in keys[:-1]:
        if key is None:
            if not isinstance(node, list) or not node:
                return None
            node = node[0]
        else:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
    last = keys[-1]
    if last is None or not isinstance(node, dict):
        return None
    node[last] = value
    return out


# --- sample arguments --------------------------------------------------------------------------
def _text_with_id(low: int, high: int, tag: str) -> str:
    for n in range(100_000):
        text = f"{tag} fact number {n} about the canary deploy"
        if low < fact_id(text) < high:
            return text
    raise AssertionError("no text found")  # pragma: no cover


MID_FACT = _text_with_id(TWO_53, TWO_63, "mid")  # id above 2^53, below 2^63
HIGH_FACT = _text_with_id(TWO_63, U64_MAX, "high")  # id above 2^63
SPARE_FACT = "spare fact kept for forget, about the canary deploy"


@dataclass(frozen=True)
class Seed:
    mid: int
    high: int
    spare: int


async def seed(client: Client) -> Seed:
    """Remember three facts (one id in (2^53, 2^63), one above 2^63) and link two of them."""
    mid = await ok(client, "remember", {"fact": MID_FACT, "metadata": {"project": "canary", "n": 1}})
    high = await ok(client, "remember", {"fact": HIGH_FACT, "metadata": {"project": "canary", "n": 2}})
    spare = await ok(client, "remember", {"fact": SPARE_FACT, "metadata": {"project": "spare"}})
    await ok(client, "relate", {"from": mid["id_str"], "to": high["id_str"], "relation": "depends_on"})
    return Seed(int(mid["id_str"]), int(high["id_str"]), int(spare["id_str"]))


def memory_samples(s: Seed) -> dict[str, dict[str, Any]]:
    """Valid arguments for every memory tool, using every optional slot, against a seeded store."""
    return {
        "remember": {"fact": "the canary runs at 2% traffic", "links": [{"target": str(s.mid), "relation": "about"}],
                     "metadata": {"project": "canary", "n": 3}, "ttl_seconds": 86400},
        "recall": {"query": "canary deploy", "k": 5, "filter": {"project": "canary"}},
        "recall_where": {"query": "canary deploy", "filters": [{"field": "n", "op": "ge", "value": 1}], "k": 5},
        "recall_fused": {"query": "canary deploy", "k": 5, "filter": {"project": "canary"}, "hops": 2,
                         "graph_boost": 0.2, "pool": 64, "date_field": "_veles_date"},
        "feedback": {"id": str(s.mid), "success": True},
        "relate": {"from": str(s.high), "to": str(s.mid), "relation": "cited_by"},
        "unrelate": {"from": str(s.high), "to": str(s.mid), "relation": "cited_by"},
        "forget": {"id": str(s.spare)},
        "why": {"decision": MID_FACT, "max_hops": 2, "filter": {"project": "canary"}},
        "list_memories": {"cursor": "0", "limit": 10, "filter": {"project": "canary"}, "include_internal": False},
        "memory_status": {},
    }


def module_examples() -> dict[str, dict[str, Any]]:
    """``EXAMPLES`` declared by tool modules: {tool: valid stateless arguments}."""
    merged: dict[str, dict[str, Any]] = {}
    for module in tool_modules():
        merged.update(getattr(module, "EXAMPLES", {}) or {})
    return merged


def refused_samples() -> dict[str, str]:
    """Tools whose sample, valid on the wire, is refused by the state of the sample store:
    {tool: the error category it must answer with}."""
    merged: dict[str, str] = {}
    for module in tool_modules():
        merged.update(getattr(module, "REFUSED_SAMPLES", {}) or {})
    return merged


def all_samples(s: Seed) -> dict[str, dict[str, Any]]:
    return {**module_examples(), **memory_samples(s)}


# --- probe batteries ---------------------------------------------------------------------------
# Values every slot of a type must accept / refuse at the wire (domain errors still count as
# "accepted": only a -32602 naming the slot in error.data.fields is a wire rejection).
ACCEPT: dict[str, list[Any]] = {
    "integer": [1, "1", " 2 "],
    "number": [0.5, "0.5", 1, "1"],
    "boolean": [True, False, "true", "false"],
}
REJECT: dict[str, list[Any]] = {
    "integer": ["abc", "1.5", 1.5, "1e3", True, "true", [1], {"v": 1}, "[1]", '{"v": 1}', "", '"1"', "NaN"],
    "number": ["abc", True, "false", [0.5], {"v": 0.5}, "[0.5]", "", "NaN", "Infinity", '"0.5"'],
    "boolean": [1, 0, "1", "yes", "True", 0.5, [True], {"v": True}, "[true]", "", '"true"'],
}
ID_ACCEPT: list[Any] = [1, "1", TWO_53 + 1, str(TWO_53 + 1), TWO_63 + 1, str(TWO_63 + 1), U64_MAX, str(U64_MAX)]
ID_REJECT: list[Any] = ["abc", "-1", -1, "1.5", 1.5, True, [1], {"id": 1}, "", str(U64_MAX + 1), "0x10"]


def battery(kind: str) -> list[tuple[Any, bool]]:
    """(value, accepted?) pairs for a slot type."""
    return [(v, True) for v in ACCEPT[kind]] + [(v, False) for v in REJECT[kind]]

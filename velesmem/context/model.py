"""The compile request and its result, as plain dataclasses, parsed from the wire's JSON shape.

The MCP layer and the ``compile`` CLI both hand a JSON-like dict to ``parse_compile_request``;
every type and cap is checked here so the two surfaces refuse exactly the same inputs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from velesmem.errors import ContextOverLimit, InvalidInput
from velesmem.ids import parse_id
from velesmem.limits import (
    DEFAULT_FUSED_HOPS,
    DEFAULT_GRAPH_BOOST,
    MAX_FRAGMENTS,
    MAX_FUSED_HOPS,
    MAX_METADATA_BYTES,
    MAX_QUERY_BYTES,
    MAX_RECALL_LIMIT,
    MAX_TOKEN_BUDGET,
    MAX_TTL_SECONDS,
)

DEFAULT_MEMORY_SCOPE_K = 5
DEFAULT_IMPORTANCE_CONFIDENCE = 0.2
DEFAULT_IMPORTANCE_RECENCY = 0.1
MAX_PRIORITY = 2**31 - 1
MAX_KIND_BYTES = 256

# Every rule id, in classification order, then the ones added by later stages.
CLASSIFY_RULES = (
    "media.atomic",
    "preserve.marked_verbatim",
    "cache.stable_prefix",
    "preserve.code_fence",
    "preserve.negative_constraint",
    "abstract.log_dedup",
    "preserve.exact_values",
    "preserve.url",
    "preserve.default",
)
STAGE_RULES = (
    "drop.duplicate",
    "drop.near_duplicate",
    "retrieve.screenshot_superseded",
    "budget.externalize",
)
ALL_RULES = CLASSIFY_RULES + STAGE_RULES
# preserve.default is the fallback and budget.externalize the hard budget: neither can be disabled.
DISABLEABLE_RULES = frozenset(ALL_RULES) - {"preserve.default", "budget.externalize"}


@dataclass(frozen=True)
class MediaIn:
    """A fragment's inline image as sent (decoded and checked by ``validate``)."""

    mime: object
    bytes_b64: object


@dataclass(frozen=True)
class FragmentIn:
    """One caller fragment: exactly one of path, non-empty content, or media (+ caption)."""

    id: int | None = None
    content: str | None = None
    path: str | None = None
    kind: str | None = None
    priority: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    media: MediaIn | None = None


@dataclass(frozen=True)
class Importance:
    """The usage-driven blend for pulled memories: learned confidence and batch recency."""

    confidence: float = DEFAULT_IMPORTANCE_CONFIDENCE
    recency: float = DEFAULT_IMPORTANCE_RECENCY
    recency_field: str | None = None


@dataclass(frozen=True)
class Pricing:
    """Caller-supplied prices: micro-units of ``currency`` per million input tokens, per model."""

    version: str
    currency: str
    models: dict[str, int]


@dataclass(frozen=True)
class CompilePolicy:
    """Per-request switches."""

    disabled_rules: frozenset[str] = frozenset()
    ids_as_strings: bool = False
    normalize_log_timestamps: bool = False
    importance: Importance = field(default_factory=Importance)
    source_ttl_seconds: int | None = None
    event_ttl_seconds: int | None = None
    pricing: Pricing | None = None
    store_sources: bool = True


@dataclass(frozen=True)
class MemoryScope:
    """Pull relevant stored memories into the compilation (fused vector + graph recall)."""

    project: str | None = None
    k: int = DEFAULT_MEMORY_SCOPE_K
    hops: int = DEFAULT_FUSED_HOPS
    graph_boost: float = DEFAULT_GRAPH_BOOST


@dataclass(frozen=True)
class CompileRequest:
    """A whole compile_context request."""

    query: str
    fragments: tuple[FragmentIn, ...]
    token_budget: int
    project: str | None = None
    target_model: str | None = None
    memory_scope: MemoryScope | None = None
    policy: CompilePolicy = field(default_factory=CompilePolicy)
    budget_clamped: bool = False


# --- parsing helpers ------------------------------------------------------------------------


def _obj(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{where} must be an object, got {type(value).__name__}")
    return value


def _no_unknown(obj: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InvalidInput(
            f"{where} has unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )


def parse_int(value: object, where: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """An integer slot: a JSON integer, or a string holding one (the lenient wire form)."""
    raw = value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput(f"{where} must be an integer, got {raw!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{where} must be an integer, got {raw!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidInput(f"{where} must be an integer, got {raw!r}")
        value = int(value)
    if lo is not None and value < lo:
        raise InvalidInput(f"{where} must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise InvalidInput(f"{where} must be <= {hi}, got {value}")
    return value


U64_DIGITS = len(str(2**64 - 1))
ECHO_CHARS = 80  # how much of a refused string an error message quotes


def echo(value: str) -> str:
    """``value`` quoted for an error message, cut to ECHO_CHARS (a refused input can be huge)."""
    return repr(value if len(value) <= ECHO_CHARS else value[:ECHO_CHARS] + "…")


def parse_u64(value: object, where: str) -> int:
    """A u64 id as a number or decimal string; a digit string too long for any u64 is refused
    before conversion (Python itself refuses to convert more than 4300 digits)."""
    if isinstance(value, str):
        digits = value.strip().lstrip("0") or "0"
        if len(digits) > U64_DIGITS:
            raise InvalidInput(
                f"{where} must be a u64 (at most {U64_DIGITS} digits), got {len(value)} characters: {echo(value)}"
            )
        if digits.isdigit() and digits.isascii():
            value = digits
    return parse_id(value, where)


def parse_float(value: object, where: str) -> float:
    """A number slot: a JSON number, or a string holding one."""
    raw = value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput(f"{where} must be a number, got {raw!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{where} must be a number, got {raw!r}")
    if not math.isfinite(value):
        raise InvalidInput(f"{where} must be a finite number")
    return float(value)


def parse_bool(value: object, where: str) -> bool:
    """A boolean slot: a JSON boolean, or the string "true"/"false"."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise InvalidInput(f"{where} must be a boolean, got {value!r}")


def parse_str(value: object, where: str, *, max_bytes: int | None = None) -> str:
    """A string slot."""
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string, got {type(value).__name__}")
    if max_bytes is not None and len(value.encode("utf-8")) > max_bytes:
        raise InvalidInput(f"{where} is over its {max_bytes}-byte cap")
    return value


def _opt(obj: Mapping[str, Any], key: str) -> Any:
    value = obj.get(key)
    return None if value is None else value


def metadata_bytes(metadata: Mapping[str, Any]) -> int:
    """Serialized size of a metadata object, as the cap counts it."""
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


_FRAGMENT_FIELDS = frozenset({"id", "content", "path", "kind", "priority", "metadata", "media"})


def parse_fragment(value: object, index: int) -> FragmentIn:
    """One ``fragments[index]`` entry (shape and types only; exclusivity is ``validate``'s job)."""
    where = f"fragments[{index}]"
    obj = _obj(value, where)
    _no_unknown(obj, _FRAGMENT_FIELDS, where)
    frag_id = None if obj.get("id") is None else parse_u64(obj["id"], f"{where}.id")
    content = None if obj.get("content") is None else parse_str(obj["content"], f"{where}.content")
    path = None if obj.get("path") is None else parse_str(obj["path"], f"{where}.path")
    kind = None
    if obj.get("kind") is not None:
        kind = parse_str(obj["kind"], f"{where}.kind", max_bytes=MAX_KIND_BYTES).strip() or None
    priority = 0
    if obj.get("priority") is not None:
        priority = parse_int(obj["priority"], f"{where}.priority", lo=-MAX_PRIORITY, hi=MAX_PRIORITY)
    metadata: dict[str, Any] = {}
    if obj.get("metadata") is not None:
        metadata = dict(_obj(obj["metadata"], f"{where}.metadata"))
        size = metadata_bytes(metadata)
        if size > MAX_METADATA_BYTES:
            raise InvalidInput(
                f"{where}.metadata is {size} bytes serialized; the cap is {MAX_METADATA_BYTES}"
            )
    media = None
    if obj.get("media") is not None:
        m = _obj(obj["media"], f"{where}.media")
        _no_unknown(m, frozenset({"mime", "bytes_b64"}), f"{where}.media")
        media = MediaIn(m.get("mime"), m.get("bytes_b64"))
    return FragmentIn(frag_id, content, path, kind, priority, metadata, media)


def _parse_pricing(value: object) -> Pricing:
    obj = _obj(value, "policy.pricing")
    _no_unknown(obj, frozenset({"version", "currency", "models"}), "policy.pricing")
    version = parse_str(obj.get("version", ""), "policy.pricing.version")
    currency = parse_str(obj.get("currency"), "policy.pricing.currency").strip()
    if not currency:
        raise InvalidInput("policy.pricing.currency must be a non-empty string such as 'USD'")
    models: dict[str, int] = {}
    for name, row in _obj(obj.get("models", {}), "policy.pricing.models").items():
        row_obj = _obj(row, f"policy.pricing.models.{name}")
        _no_unknown(row_obj, frozenset({"input_micros_per_million_tokens"}), f"policy.pricing.models.{name}")
        models[name.lower()] = parse_int(
            row_obj.get("input_micros_per_million_tokens"),
            f"policy.pricing.models.{name}.input_micros_per_million_tokens",
            lo=0,
        )
    return Pricing(version, currency, models)


def _parse_importance(value: object) -> Importance:
    obj = _obj(value, "policy.importance")
    _no_unknown(obj, frozenset({"confidence", "recency", "recency_field"}), "policy.importance")
    confidence = DEFAULT_IMPORTANCE_CONFIDENCE
    recency = DEFAULT_IMPORTANCE_RECENCY
    if obj.get("confidence") is not None:
        confidence = parse_float(obj["confidence"], "policy.importance.confidence")
    if obj.get("recency") is not None:
        recency = parse_float(obj["recency"], "policy.importance.recency")
    field_name = None
    if obj.get("recency_field") is not None:
        field_name = parse_str(obj["recency_field"], "policy.importance.recency_field") or None
    return Importance(confidence, recency, field_name)


_POLICY_FIELDS = frozenset(
    {
        "disabled_rules",
        "ids_as_strings",
        "normalize_log_timestamps",
        "importance",
        "source_ttl_seconds",
        "event_ttl_seconds",
        "pricing",
        "store_sources",
    }
)


def parse_policy(value: object) -> CompilePolicy:
    """``policy``: unknown rule ids and unknown fields are refused (a typo must not go unnoticed)."""
    if value is None:
        return CompilePolicy()
    obj = _obj(value, "policy")
    _no_unknown(obj, _POLICY_FIELDS, "policy")
    disabled: set[str] = set()
    raw_rules = obj.get("disabled_rules") or []
    if not isinstance(raw_rules, list):
        raise InvalidInput("policy.disabled_rules must be an array of rule ids")
    for rule in raw_rules:
        if not isinstance(rule, str) or rule not in DISABLEABLE_RULES:
            raise InvalidInput(
                f"policy.disabled_rules: {rule!r} is not a rule that can be disabled; "
                f"known: {', '.join(sorted(DISABLEABLE_RULES))}"
            )
        disabled.add(rule)
    ttl: dict[str, int | None] = {}
    for key in ("source_ttl_seconds", "event_ttl_seconds"):
        ttl[key] = None if obj.get(key) is None else parse_int(obj[key], f"policy.{key}", lo=1,
                                                              hi=MAX_TTL_SECONDS)
    return CompilePolicy(
        disabled_rules=frozenset(disabled),
        ids_as_strings=parse_bool(obj.get("ids_as_strings", False), "policy.ids_as_strings"),
        normalize_log_timestamps=parse_bool(
            obj.get("normalize_log_timestamps", False), "policy.normalize_log_timestamps"
        ),
        importance=_parse_importance(obj["importance"]) if obj.get("importance") is not None else Importance(),
        source_ttl_seconds=ttl["source_ttl_seconds"],
        event_ttl_seconds=ttl["event_ttl_seconds"],
        pricing=_parse_pricing(obj["pricing"]) if obj.get("pricing") is not None else None,
        store_sources=parse_bool(obj.get("store_sources", True), "policy.store_sources"),
    )


def parse_memory_scope(value: object) -> MemoryScope | None:
    """``memory_scope`` {project?, k?, hops?, graph_boost?}."""
    if value is None:
        return None
    obj = _obj(value, "memory_scope")
    _no_unknown(obj, frozenset({"project", "k", "hops", "graph_boost"}), "memory_scope")
    project = None if obj.get("project") is None else parse_str(obj["project"], "memory_scope.project")
    k = DEFAULT_MEMORY_SCOPE_K
    if obj.get("k") is not None:
        k = parse_int(obj["k"], "memory_scope.k", lo=1, hi=MAX_RECALL_LIMIT)
    hops = DEFAULT_FUSED_HOPS
    if obj.get("hops") is not None:
        hops = parse_int(obj["hops"], "memory_scope.hops", lo=0, hi=MAX_FUSED_HOPS)
    boost = DEFAULT_GRAPH_BOOST
    if obj.get("graph_boost") is not None:
        boost = parse_float(obj["graph_boost"], "memory_scope.graph_boost")
    return MemoryScope(project, k, hops, boost)


_REQUEST_FIELDS = frozenset(
    {"query", "fragments", "token_budget", "project", "target_model", "memory_scope", "policy"}
)


def parse_compile_request(value: object) -> CompileRequest:
    """A compile_context request from its JSON shape; InvalidInput / ContextOverLimit on error."""
    obj = _obj(value, "request")
    _no_unknown(obj, _REQUEST_FIELDS, "request")
    if obj.get("query") is None:
        raise InvalidInput("query is required")
    query = parse_str(obj["query"], "query", max_bytes=MAX_QUERY_BYTES)
    if obj.get("token_budget") is None:
        raise InvalidInput("token_budget is required")
    budget = parse_int(obj["token_budget"], "token_budget", lo=0)
    clamped = budget > MAX_TOKEN_BUDGET
    budget = min(budget, MAX_TOKEN_BUDGET)
    raw_fragments = obj.get("fragments")
    if not isinstance(raw_fragments, list):
        raise InvalidInput("fragments must be an array of ContextFragment")
    if len(raw_fragments) > MAX_FRAGMENTS:
        raise ContextOverLimit(
            f"{len(raw_fragments)} fragments; the cap is {MAX_FRAGMENTS} (MAX_FRAGMENTS) per request"
        )
    fragments = tuple(parse_fragment(f, i) for i, f in enumerate(raw_fragments))
    project = None if obj.get("project") is None else parse_str(obj["project"], "project")
    target = None if obj.get("target_model") is None else parse_str(obj["target_model"], "target_model")
    return CompileRequest(
        query=query,
        fragments=fragments,
        token_budget=budget,
        project=project or None,
        target_model=target or None,
        memory_scope=parse_memory_scope(obj.get("memory_scope")),
        policy=parse_policy(obj.get("policy")),
        budget_clamped=clamped,
    )

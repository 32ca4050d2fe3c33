"""The compile pipeline: validate → classify → dedup → relevance → supersession → chunk → pack → assemble.

Pure: no clock, no randomness, no I/O except reading allowlisted path fragments and, when a
``memory_scope`` is given and a memory is attached, one fused recall. The same request therefore
compiles to byte-identical output in any process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from velesmem.context.chunk import chunk_item, packable_text
from velesmem.context.classify import classify
from velesmem.context.dedup import dedup
from velesmem.context.estimator import SEPARATOR, estimate_tokens
from velesmem.context.ingest import IngestRoots
from velesmem.context.items import Item
from velesmem.context.logs import collapse
from velesmem.context.memory_bridge import pull_memories
from velesmem.context.model import CompileRequest
from velesmem.context.pack import min_budget, pack
from velesmem.context.relevance import terms
from velesmem.context.relevance import relevance as lexical_relevance
from velesmem.context.supersede import supersede_screenshots
from velesmem.context.validate import build_items
from velesmem.errors import Internal

RISK_ORDER = ("low", "medium", "high")
ESTIMATOR_NAME = "heuristic-cl100k-overcount-v1"
ID_FIELDS = frozenset({"fragment_id", "content_hash", "memory_id"})


class FusedRecaller(Protocol):
    """What ``memory_scope`` needs from the memory service."""

    def recall_fused(self, query: str, k: int = 10, filter: dict[str, Any] | None = None,
                     hops: int = 2, graph_boost: float = 0.15) -> Any: ...


@dataclass(frozen=True)
class NothingFit:
    """Why a compile's content is empty although it had fragments: all were set aside."""

    fragments: int  # candidates left after dedup and supersession, none packed
    tokens: int  # their original estimate
    min_budget: int  # the smallest token_budget that packs at least one of them
    warning: str  # the sentence added to the result's warnings


@dataclass
class Compilation:
    """One compile's result (ids as integers) plus the items, for storing sources and explaining."""

    result: dict[str, Any]
    items: list[Item]
    request: CompileRequest
    nothing_fit: NothingFit | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire shape, with ids rewritten to strings under ``policy.ids_as_strings``."""
        return stringify_ids(self.result) if self.request.policy.ids_as_strings else self.result


def stringify_ids(value: Any) -> Any:
    """Every fragment_id / content_hash / memory_id / fragment_ids value as a decimal string.

    The ``*_str`` twins are already strings and stay as they are."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, v in value.items():
            if key in ID_FIELDS and isinstance(v, int) and not isinstance(v, bool):
                out[key] = str(v)
            elif key == "fragment_ids" and isinstance(v, list):
                out[key] = [str(x) for x in v]
            else:
                out[key] = stringify_ids(v)
        return out
    if isinstance(value, list):
        return [stringify_ids(v) for v in value]
    return value


def compile_request(
    request: CompileRequest,
    *,
    roots: IngestRoots | None = None,
    memory: FusedRecaller | None = None,
) -> Compilation:
    """Compile ``request``; raise the typed error of the first invalid fragment."""
    policy = request.policy
    warnings: list[str] = []
    if request.budget_clamped:
        warnings.append("token_budget was clamped to 10000000 (MAX_TOKEN_BUDGET)")
    items = build_items(request, roots or IngestRoots())
    if request.memory_scope is not None:
        if memory is None:
            warnings.append("memory_scope ignored: no memory store is attached to this compiler")
        elif not request.query.strip():
            warnings.append("memory_scope ignored: an empty query recalls nothing")
        else:
            items += pull_memories(memory, request, start_order=len(items), warnings=warnings)

    disabled = policy.disabled_rules
    for item in items:
        classify(item, disabled, policy.normalize_log_timestamps)
    dedup(items, disabled)
    query_terms = terms(request.query)
    for item in items:
        if item.memory_id is None:
            item.relevance = lexical_relevance(query_terms, item.text)
    supersede_screenshots(items, disabled)

    candidates = [it for it in items if it.dropped_rule is None]
    texts: dict[int, str] = {}
    for item in candidates:
        if item.rule_id == "abstract.log_dedup":
            collapsed = collapse(item.text, policy.normalize_log_timestamps)
            item.packed_text = collapsed.text
            item.reason = (
                f"log collapsed: {collapsed.lines} lines into {collapsed.distinct} distinct, "
                "repeats counted (xN)"
                + (" — timestamps normalized before collapsing" if collapsed.normalized_merges else "")
            )
        texts[item.order] = packable_text(item)
        chunk_item(item)
    pack(candidates, request.token_budget, texts)
    return _assemble(request, items, texts, warnings)


def _decision(item: Item) -> dict[str, Any]:
    """The ContextDecision of one item, after packing."""
    action, rule_id, risk, handle = "preserve", item.rule_id, "low", None
    reason = item.reason
    if item.dropped_rule is not None:
        rule_id = item.dropped_rule
        action = "retrieve" if rule_id == "retrieve.screenshot_superseded" else "drop"
        handle = item.handle
    elif item.packed_chunks == 0:
        action, rule_id, handle = "retrieve", "budget.externalize", item.handle
        risk = "high" if item.critical else "medium"
        reason = (
            f"over budget ({sum(c.tokens for c in item.chunks)} tokens did not fit); set aside behind {item.handle} — "
            f"classified {item.rule_id}"
        )
    elif item.packed_chunks < len(item.chunks):
        action, rule_id, handle = "partial", "budget.externalize", item.handle
        risk = "high" if item.critical else "medium"
        reason = (
            f"packed {item.packed_chunks} of {len(item.chunks)} chunks; the whole fragment is behind "
            f"{item.handle} — classified {item.rule_id}"
        )
    elif item.rule_id == "cache.stable_prefix":
        action = "cache"
    elif item.rule_id == "abstract.log_dedup":
        action, handle = "abstract", item.handle
    if item.memory_reason:
        reason = f"{item.memory_reason}; {reason}"
    out: dict[str, Any] = {
        "fragment_id": item.fragment_id,
        "fragment_id_str": str(item.fragment_id),
        "fragment_index": item.index,
        "memory_id": item.memory_id,
        "memory_id_str": None if item.memory_id is None else str(item.memory_id),
        "action": action,
        "rule_id": rule_id,
        "reason": reason,
        "relevance": item.relevance,
        "risk": risk,
        "content_hash": item.content_hash,
        "content_hash_str": str(item.content_hash),
    }
    if handle is not None:
        out["handle"] = handle
    return out


def _assemble(
    request: CompileRequest, items: list[Item], texts: dict[int, str], warnings: list[str]
) -> Compilation:
    policy = request.policy
    sections: dict[str, dict[str, Any]] = {}
    pieces: list[str] = []
    media_tokens = 0
    for name, in_section in (("cache", True), ("body", False)):
        section_pieces: list[str] = []
        ids: list[int] = []
        media: list[dict[str, Any]] = []
        for item in items:
            if item.dropped_rule is not None or item.packed_chunks == 0 or item.is_cache != in_section:
                continue
            text = texts[item.order]
            end = item.chunks[item.packed_chunks - 1].end
            section_pieces.append(text[:end])
            ids.append(item.fragment_id)
            if item.media is not None:
                m = item.media
                media_tokens += m.tokens
                media.append({"fragment_id": item.fragment_id, "fragment_id_str": str(item.fragment_id),
                              "handle": item.handle, "mime": m.mime,
                              "bytes_b64": m.bytes_b64, "width": m.width, "height": m.height,
                              "tokens": m.tokens})
        if section_pieces:
            content = SEPARATOR.join(section_pieces)
            section: dict[str, Any] = {
                "name": name,
                "content": content,
                "tokens": estimate_tokens(content) + sum(m["tokens"] for m in media),
                "fragment_ids": ids,
                "fragment_ids_str": [str(i) for i in ids],
            }
            if media:
                section["media"] = media
            sections[name] = section
            pieces.extend(section_pieces)
    content = SEPARATOR.join(pieces)
    if len(sections) == 1:  # the one section is the content: reuse its count
        tokens_out = next(iter(sections.values()))["tokens"]
    else:
        tokens_out = estimate_tokens(content) + media_tokens if content else 0
    if tokens_out > request.token_budget:
        raise Internal(
            f"compiler invariant broken: {tokens_out} tokens packed under a budget of {request.token_budget}"
        )

    decisions = [_decision(item) for item in items]
    risk = max((d["risk"] for d in decisions), key=RISK_ORDER.index, default="low")
    lost = sum(1 for it, d in zip(items, decisions) if it.critical and d["rule_id"] == "budget.externalize")
    candidates = [it for it in items if it.dropped_rule is None]
    nothing_fit = None
    if not content and candidates:
        nothing_fit = _nothing_fit(request.token_budget, candidates, texts, lost)
        warnings.insert(0, nothing_fit.warning)  # first: the one thing to read before using it
    elif lost:
        warnings.append(
            f"{lost} preserve-classified fragment(s) did not fit the budget (risk high): raise "
            "token_budget or fetch them with retrieve_context_source"
        )

    sources: list[dict[str, Any]] = []
    by_hash: dict[int, dict[str, Any]] = {}
    for item in items:
        src = by_hash.get(item.content_hash)
        if src is None:
            src = {"handle": item.handle, "content_hash": item.content_hash,
                   "content_hash_str": str(item.content_hash), "bytes": len(item.source_bytes),
                   "tokens": item.tokens, "fragment_ids": [], "fragment_ids_str": []}
            if item.media is not None:
                src["mime"] = item.media.mime
            by_hash[item.content_hash] = src
            sources.append(src)
        if item.fragment_id not in src["fragment_ids"]:
            src["fragment_ids"].append(item.fragment_id)
            src["fragment_ids_str"].append(str(item.fragment_id))
    handles = [
        {"handle": d["handle"], "fragment_id": d["fragment_id"], "fragment_id_str": d["fragment_id_str"],
         "rule_id": d["rule_id"], "tokens": item.tokens}
        for item, d in zip(items, decisions)
        if d["action"] in ("retrieve", "partial")
    ]

    tokens_in = sum(item.tokens for item in items)
    saved = max(0, tokens_in - tokens_out)
    insights: dict[str, Any] = {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_saved": saved,
        "token_budget": request.token_budget,
        "fragments": len(items),
        "estimator": ESTIMATOR_NAME,
        "cost_saved_micros_by_currency": {},
    }
    pricing = policy.pricing
    if pricing is not None:
        insights["pricing_version"] = pricing.version
        rate = pricing.models.get((request.target_model or "").lower())
        if rate is None:
            warnings.append(
                f"no policy.pricing row for target_model {request.target_model!r}: cost not computed"
            )
        else:
            insights["cost_saved_micros_by_currency"] = {pricing.currency: saved * rate // 1_000_000}

    result: dict[str, Any] = {
        "content": content,
        "sections": list(sections.values()),
        "decisions": decisions,
        "sources": sources,
        "retrieval_handles": handles,
        "insights": insights,
        "risk": risk,
        "warnings": warnings,
    }
    return Compilation(result, items, request, nothing_fit)


def _nothing_fit(budget: int, candidates: list[Item], texts: dict[int, str], critical: int) -> NothingFit:
    """Say that the content is empty, why, and the two ways to get it back."""
    need = min(min_budget(it, texts[it.order]) for it in candidates)
    tokens = sum(it.tokens for it in candidates)
    warning = (
        f"nothing fit token_budget {budget}: the content is empty and all {len(candidates)} fragment(s) "
        f"({tokens} tokens) were set aside behind their retrieval handles"
        + (f", {critical} of them preserve-classified (risk high)" if critical else "")
        + f"; a token_budget of {need} or more packs at least one, and retrieve_context_source "
        "returns each one's exact content (retrieval_handles lists them)"
    )
    return NothingFit(len(candidates), tokens, need, warning)

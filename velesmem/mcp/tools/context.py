"""The nine context-compiler tools: compile_context, compile_transcript, explain_compilation,
retrieve_context_source, context_savings, suggest_budget, save/load/list_working_contexts.

The wire models below only check shapes (with the shared lenient scalar types); every value and
cap is checked by ``velesmem.context`` so the MCP tools and the ``compile`` CLI refuse the same
inputs. Sources, compilation events and working contexts live in the memory store as internal
facts (``MemoryContextStore``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from velesmem.mcp.registry import ToolRegistry
from pydantic import BaseModel, Field, model_validator

from velesmem import limits
from velesmem.context.media import png_bytes
from velesmem.ids import fnv1a64
from velesmem.mcp.annotations import READ, WRITE
from velesmem.mcp.app import AppContext
from velesmem.mcp.results import tool_result
from velesmem.mcp.wire import (
    ArrayOf,
    OptArrayOf,
    Id,
    Integer,
    OptBoolean,
    OptId,
    OptInteger,
    OptNumber,
    OptObject,
    OptString,
    WireModel,
    optional,
)

Result = dict[str, Any]

# compile_context reads but also caches sources and records a savings event.
COMPILE = WRITE


class MediaWire(WireModel):
    """An inline image."""

    mime: Annotated[str, Field(description="image/png or image/jpeg (others cost a safe over-count).")]
    bytes_b64: Annotated[str, Field(description=f"Standard base64, at most {limits.MAX_MEDIA_B64_BYTES // limits.MIB} MiB.")]


class FragmentWire(WireModel):
    """One ContextFragment: exactly one of path, non-empty content, or media (content = caption)."""

    id: Annotated[OptId, optional("Caller id for the fragment (number or decimal string); default: the content hash.")]
    content: Annotated[OptString, optional("The text (the caption for a media fragment).")]
    path: Annotated[OptString, optional("Absolute path of a file under VELESDB_MEMORY_INGEST_ROOTS, read instead of content.")]
    kind: Annotated[OptString, optional('What it is: "log", "code", "screenshot", … (drives rules).')]
    priority: Annotated[OptInteger, optional("Higher packs first within its tier (default 0).")]
    metadata: Annotated[OptObject, optional(f'Free-form, at most {limits.MAX_METADATA_BYTES // limits.KIB} KiB; "verbatim": true forces preservation, "cache": true joins the stable prefix, "target" names a screenshot\'s subject.')]
    media: Annotated[MediaWire | None, optional("An inline image {mime, bytes_b64}.")]


class ImportanceWire(WireModel):
    """The pulled-memory blend: learned confidence and batch-relative recency."""

    confidence: Annotated[OptNumber, optional("Weight of (rl_confidence − 0.5)·2 (default 0.2).")]
    recency: Annotated[OptNumber, optional("Weight of the batch-normalised recency (default 0.1).")]
    recency_field: Annotated[OptString, optional("Numeric metadata key for recency (e.g. _veles_date); none by default.")]


class PricingRow(WireModel):
    """One model's price."""

    input_micros_per_million_tokens: Annotated[Integer, Field(description="Micro-units of the currency per million input tokens.")]


class PricingWire(WireModel):
    """Caller-supplied pricing for cost insights."""

    version: Annotated[str, Field(description="A label for this price list.")]
    currency: Annotated[str, Field(description='e.g. "USD".')]
    models: Annotated[dict[str, PricingRow], Field(description="Model name → price row.")]


class PolicyWire(WireModel):
    """Per-request policy overrides."""

    disabled_rules: Annotated[OptArrayOf[str], optional("Rule ids to switch off (e.g. retrieve.screenshot_superseded).")]
    ids_as_strings: Annotated[OptBoolean, optional("Every id field of the response as a decimal string (default false).")]
    normalize_log_timestamps: Annotated[OptBoolean, optional("Mask leading timestamps/counters when grouping kind=log lines (default false).")]
    importance: Annotated[ImportanceWire | None, optional("Blend for memories pulled by memory_scope.")]
    source_ttl_seconds: Annotated[OptInteger, optional("Stored sources expire after this many seconds (default: permanent).")]
    event_ttl_seconds: Annotated[OptInteger, optional("Savings events expire after this many seconds (default: permanent).")]
    pricing: Annotated[PricingWire | None, optional("{version, currency, models{name: {input_micros_per_million_tokens}}}.")]
    store_sources: Annotated[OptBoolean, optional("Cache every distinct fragment's source for retrieve_context_source (default true).")]


class MemoryScopeWire(WireModel):
    """Pull relevant stored memories in (fused vector + graph recall)."""

    project: Annotated[OptString, optional("Restrict to this project (default: the request's project).")]
    k: Annotated[OptInteger, optional("How many memories to pull (default 5).")]
    hops: Annotated[OptInteger, optional(f"Graph walk depth (default {limits.DEFAULT_FUSED_HOPS}).")]
    graph_boost: Annotated[OptNumber, optional(f"Weight of graph reach (default {limits.DEFAULT_GRAPH_BOOST}).")]


Query = Annotated[str, Field(description="What the agent is working on; drives relevance.")]
Fragments = Annotated[ArrayOf[FragmentWire], Field(description=f"At most {limits.MAX_FRAGMENTS} fragments.")]
Budget = Annotated[Integer, Field(description=f"Hard ceiling on the assembled content, in tokens (clamped to {limits.MAX_TOKEN_BUDGET}).")]
Project = Annotated[OptString, optional("Project facet recorded in provenance and savings.")]
TargetModel = Annotated[OptString, optional("Selects the policy.pricing row for cost insights.")]
Scope = Annotated[MemoryScopeWire | None, optional("{project?, k?, hops?, graph_boost?}: pull relevant memories in.")]
Policy = Annotated[PolicyWire | None, optional("CompilePolicy overrides.")]


class CompileRequestWire(WireModel):
    """The exact compile_context request."""

    query: Query
    fragments: Fragments
    token_budget: Budget
    project: Project
    target_model: TargetModel
    memory_scope: Scope
    policy: Policy


class SegmentationWire(WireModel):
    """How compile_transcript cuts a transcript."""

    format: Annotated[Literal["auto", "plain", "jsonl"] | None, optional("auto (default), plain or jsonl.")]
    min_segment_bytes: Annotated[OptInteger, optional(f"Smaller segments merge with a neighbour of the same turn and kind (default {limits.DEFAULT_MIN_SEGMENT_BYTES}).")]
    cache_system_turn: Annotated[OptBoolean, optional("Mark a leading system turn cache=true (default true).")]


class WorkingEntry(WireModel):
    """One entry of a working-context list (a bare string is read as {text})."""

    text: Annotated[OptString, optional("The entry.")]
    fragment_id: Annotated[OptId, optional("A compiled fragment it rests on (decimal string).")]
    memory_id: Annotated[OptId, optional("A memory it rests on (decimal string).")]
    handle: Annotated[OptString, optional("A ctx://source/ handle with the exact evidence.")]

    @model_validator(mode="before")
    @classmethod
    def _bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                decoded = json.loads(value)  # a JSON-encoded entry object, as every WireModel takes
            except ValueError:
                decoded = None
            return decoded if isinstance(decoded, dict) else {"text": value}
        return value


Entries = Annotated[OptArrayOf[WorkingEntry], optional("Entries: {text, fragment_id?, memory_id?, handle?}.")]


class WorkingWire(WireModel):
    """A session's distilled working state."""

    goal: Annotated[OptString, optional("What the session is trying to achieve.")]
    active_constraints: Entries
    verified_facts: Entries
    open_hypotheses: Entries
    decisions: Entries
    exact_evidence: Entries
    pending_actions: Entries


def plain(value: Any) -> Any:
    """A wire model as the JSON-shaped dict the domain parses, absent (None) fields omitted."""
    if isinstance(value, BaseModel):
        return {k: plain(getattr(value, k)) for k in type(value).model_fields if getattr(value, k) is not None}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _request(query: str, fragments: list[FragmentWire], token_budget: int, **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"query": query, "fragments": plain(fragments), "token_budget": token_budget}
    out.update({k: plain(v) for k, v in rest.items() if v is not None})
    return out


def register(mcp: ToolRegistry, app: AppContext) -> None:
    """Install the nine compiler tools, bound to the Runtime's ContextService; each runs on the
    Runtime's worker pool."""
    rt = app.runtime
    service = app.context

    @mcp.tool(annotations=COMPILE)
    async def compile_context(query: Query, fragments: Fragments, token_budget: Budget, project: Project,
                        target_model: TargetModel, memory_scope: Scope, policy: Policy) -> Result:
        """Compile context fragments into a token-budgeted, provenance-audited prompt context, deterministically and with no LLM call. Returns { content, sections, decisions, sources, retrieval_handles, insights, risk, warnings }; risk "high" means preserve-classified content could not be packed — check it before use."""
        return await rt.run(lambda: tool_result(service.compile_context(_request(
            query, fragments, token_budget, project=project, target_model=target_model,
            memory_scope=memory_scope, policy=policy))))

    @mcp.tool(annotations=COMPILE)
    async def compile_transcript(
        query: Query,
        token_budget: Budget,
        transcript: Annotated[OptString, optional("Inline transcript text (exactly one of transcript or path).")],
        path: Annotated[OptString, optional(f"Absolute path under VELESDB_MEMORY_INGEST_ROOTS, at most {limits.MAX_TRANSCRIPT_BYTES // limits.MIB} MiB.")],
        project: Project,
        target_model: TargetModel,
        policy: Policy,
        segmentation: Annotated[SegmentationWire | None, optional("{format?, min_segment_bytes?, cache_system_turn?}.")],
    ) -> Result:
        """Segment a raw agent-session transcript into turns and sub-turns, then compile it like compile_context. Returns { context, segmentation } — segmentation is the audit trail (format_detected, segments with byte ranges and fragment ids, merged_segments)."""
        args: dict[str, Any] = {"query": query, "token_budget": token_budget, "transcript": transcript,
                                "path": path, "project": project, "target_model": target_model,
                                "policy": plain(policy), "segmentation": plain(segmentation)}
        return await rt.run(lambda: tool_result(service.compile_transcript(
            {k: v for k, v in args.items() if v is not None})))

    @mcp.tool(annotations=READ)
    async def explain_compilation(
        request: Annotated[CompileRequestWire, Field(description="The exact compile_context request to explain.")],
        fragment_id: Annotated[Id, Field(description="The fragment whose decision to return (relay the value compile_context gave).")],
        fragment_index: Annotated[OptInteger, optional("0-based position in request.fragments; wins over fragment_id.")],
    ) -> Result:
        """Why was this fragment dropped, shortened, cached or externalized? Stateless: the request is re-compiled with recording off. Returns one ContextDecision { fragment_id, memory_id, action, rule_id, reason, relevance, risk, content_hash, handle? }."""
        return await rt.run(lambda: service.explain(plain(request), fragment_id, fragment_index))

    @mcp.tool(annotations=READ)
    async def retrieve_context_source(
        handle: Annotated[str, Field(description="A ctx://source/<hash> handle from a compiled context.")],
    ) -> Result:
        """Fetch back the exact original bytes behind a ctx://source/<hash> handle. Returns { handle, content, media? } — media byte-identical to the submitted base64."""
        return await rt.run(lambda: tool_result(service.retrieve(handle)))

    @mcp.tool(annotations=READ)
    async def context_savings(
        project: Annotated[OptString, optional("Restrict the aggregation to one project facet.")],
    ) -> Result:
        """Aggregate the recorded savings of past compilations (local estimates, metadata only). Returns { events, tokens_in, tokens_out, tokens_saved, cost_saved_micros_by_currency, truncated }."""
        return await rt.run(lambda: service.savings(project))

    @mcp.tool(annotations=READ)
    async def suggest_budget(
        target_model: Annotated[str, Field(description="Model name, matched case-insensitively against a static table.")],
        reserve_tokens: Annotated[Integer, Field(description="Room reserved for the response (default 0).")] = 0,
    ) -> Result:
        """Suggest a starting token_budget for a model from a static, dated table (never a network call). Returns { window, suggested_budget, source }; an unlisted model gets nulls."""
        return await rt.run(lambda: service.suggest_budget(target_model, reserve_tokens))

    @mcp.tool(annotations=WRITE)
    async def save_working_context(
        project: Annotated[str, Field(description="Project facet.")],
        session: Annotated[str, Field(description="A stable id for the agent run to resume.")],
        working: Annotated[WorkingWire, Field(description=f"{{goal?, active_constraints[], verified_facts[], open_hypotheses[], decisions[], exact_evidence[], pending_actions[]}}, at most {limits.MAX_WORKING_CONTEXT_BYTES // limits.MIB} MiB.")],
    ) -> Result:
        """Persist a session's distilled working state (upsert per project + session). Returns { id, id_str }."""
        return await rt.run(lambda: service.save_working(project, session, plain(working)))

    @mcp.tool(annotations=READ)
    async def load_working_context(
        project: Annotated[str, Field(description="The facet it was saved under.")],
        session: Annotated[str, Field(description="The session id it was saved under.")],
    ) -> Result:
        """Resume a session. Returns { found, working, other_sessions }; ids inside working are always decimal strings. found false: check other_sessions for a typo."""
        return await rt.run(lambda: service.load_working(project, session))

    @mcp.tool(annotations=READ)
    async def list_working_contexts(
        project: Annotated[str, Field(description="The facet to list.")],
    ) -> Result:
        """Discover what is resumable. Returns { sessions: [ { session, saved_at } ] }, most recently saved first."""
        return await rt.run(lambda: service.list_working(project))


_EXAMPLE_PNG = __import__("base64").b64encode(png_bytes(4, 3)).decode()
_EXAMPLE_REQUEST: dict[str, Any] = {
    "query": "state of the canary deploy",
    "token_budget": 500,
    "project": "canary",
    "target_model": "gpt-4o",
    "fragments": [
        {"id": "1", "content": "The canary is green: 2% traffic, zero errors.", "kind": "text", "priority": 1,
         "metadata": {"cache": False}},
        {"content": "", "kind": "screenshot", "metadata": {"target": "dashboard"},
         "media": {"mime": "image/png", "bytes_b64": _EXAMPLE_PNG}},
    ],
    "memory_scope": {"project": "canary", "k": 3, "hops": 1, "graph_boost": 0.1},
    "policy": {"disabled_rules": ["drop.near_duplicate"], "ids_as_strings": False,
               "normalize_log_timestamps": True,
               "importance": {"confidence": 0.2, "recency": 0.1, "recency_field": "_veles_date"},
               "source_ttl_seconds": 86400, "event_ttl_seconds": 86400,
               "pricing": {"version": "example", "currency": "USD",
                           "models": {"gpt-4o": {"input_micros_per_million_tokens": 2500000}}},
               "store_sources": True},
}
# Valid stateless arguments for the MCP schema tests (compile_context runs first and stores the
# source retrieve_context_source's example asks for).
EXAMPLES: dict[str, dict[str, Any]] = {
    "compile_context": _EXAMPLE_REQUEST,
    "compile_transcript": {"query": "canary", "token_budget": 200, "transcript": "User: hi\nAssistant: hello",
                           "project": "canary", "target_model": "gpt-4o", "policy": {"ids_as_strings": True},
                           "segmentation": {"format": "plain", "min_segment_bytes": 16, "cache_system_turn": True}},
    "explain_compilation": {"request": _EXAMPLE_REQUEST, "fragment_id": "1", "fragment_index": 0},
    "retrieve_context_source": {"handle": "ctx://source/" + str(fnv1a64(
        b"The canary is green: 2% traffic, zero errors."))},
    "context_savings": {"project": "canary"},
    "suggest_budget": {"target_model": "gpt-4o", "reserve_tokens": 1000},
    "save_working_context": {"project": "canary", "session": "s1",
                             "working": {"goal": "ship the canary",
                                         "verified_facts": [{"text": "2% traffic", "fragment_id": "18446744073709551615",
                                                             "memory_id": "9007199254740993", "handle": "ctx://source/1"}],
                                         "active_constraints": [], "open_hypotheses": [], "decisions": [],
                                         "exact_evidence": [], "pending_actions": []}},
    "load_working_context": {"project": "canary", "session": "s1"},
    "list_working_contexts": {"project": "canary"},
}

"""The memory tools: remember, recall*, feedback, relate/unrelate, forget, why, list, status.

Each tool is one call into ``MemoryService``; the service validates values and caps, the wire types
validate shapes. Results are the service results' ``to_dict()`` (ids with their ``*_str`` twins),
made into wire results in the worker thread that computed them (``velesmem.mcp.results``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from velesmem.mcp.registry import ToolRegistry
from pydantic import Field

from velesmem import limits
from velesmem.mcp.aliases import deprecated_alias
from velesmem.mcp.annotations import CUMULATIVE, DELETE, READ, WRITE
from velesmem.mcp.app import AppContext
from velesmem.mcp.author import request_author
from velesmem.mcp.results import Result, tool_result
from velesmem.mcp.wire import (
    ArrayOf,
    OptArrayOf,
    Boolean,
    Id,
    Integer,
    JsonScalar,
    Number,
    OptId,
    OptInteger,
    OptObject,
    OptString,
    WireModel,
    optional,
)

ORDER = 0  # listed first, as in the contract


COUNTED_TOOLS = ("recall", "recall_where", "recall_fused")  # take k, with limit as deprecated alias


def _doc(text: str) -> Any:
    return Field(description=text)


class Link(WireModel):
    """A typed edge created at write time: this fact → target."""

    target: Annotated[Id, _doc("The memory the link points to (decimal string or number).")]
    relation: Annotated[str, _doc("Label, read as fact relation target.")]


class Predicate(WireModel):
    """One typed column predicate of recall_where."""

    field: Annotated[str, _doc("Metadata key (ASCII letters, digits, _).")]
    op: Annotated[Literal["eq", "ne", "lt", "le", "gt", "ge"], _doc("Comparison.")]
    value: Annotated[JsonScalar, _doc('Compared type-strictly: 20230601 never matches "20230601".')]


# --- parameter slots, shared by name across tools --------------------------------------------
Query = Annotated[str, _doc("Natural-language query.")]
K = Annotated[Integer, _doc(
    f"Number of results (default {limits.DEFAULT_RECALL_K}, capped at {limits.MAX_RECALL_LIMIT}).")]
Filter = Annotated[OptObject, optional('Exact-match metadata filter, e.g. {"project": "veles"}.')]
Relation = Annotated[str, _doc("Edge label, read as `from relation to` (caused_by, depends_on, …).")]

Fact = Annotated[str, _doc(
    f"The text to store, at most {limits.MAX_EMBEDDABLE_TEXT_BYTES} bytes (refused, never truncated).")]
Links = Annotated[OptArrayOf[Link], optional("Typed edges created at write time: [{target, relation}].")]
Metadata = Annotated[OptObject, optional(
    f"Free-form metadata for later filtering, at most {limits.MAX_METADATA_BYTES // limits.KIB} KiB "
    "serialized. _veles_date (YYYYMMDD) is stamped with today unless given.")]
TtlSeconds = Annotated[OptInteger, optional(
    "Durable expiry in seconds. Omit for a permanent fact (or the server's VELESDB_MEMORY_DEFAULT_TTL).")]
Filters = Annotated[ArrayOf[Predicate], _doc(
    "Typed predicates [{field, op, value}], op in eq, ne, lt, le, gt, ge; all ANDed.")]
Hops = Annotated[Integer, _doc(
    f"Graph hops walked from the top vector hit (default {limits.DEFAULT_FUSED_HOPS}, "
    f"capped at {limits.MAX_FUSED_HOPS}).")]
GraphBoost = Annotated[Number, _doc(
    "Weight added to a graph-reached fact's normalised vector score "
    f"(default {limits.DEFAULT_GRAPH_BOOST}).")]
Pool = Annotated[OptInteger, optional(
    "Oversampled vector candidate pool re-ranked before the k cutoff (default "
    f"max(k x {limits.FUSED_POOL_FACTOR}, {limits.MIN_FUSED_POOL}), capped at {limits.MAX_FUSED_POOL}).")]
DateField = Annotated[OptString, optional(
    "Metadata key holding each fact's YYYYMMDD date (e.g. _veles_date); adds dated_context and now.")]
Success = Annotated[Boolean, _doc("true = the fact was useful, false = it was noise.")]
Decision = Annotated[str, _doc("The decision or fact to explain.")]
MaxHops = Annotated[Integer, _doc(
    f"Default {limits.DEFAULT_WHY_HOPS}, capped at {limits.MAX_WHY_HOPS}.")]
SeedFilter = Annotated[OptObject, optional(
    'Exact-match metadata filter scoping the seed, e.g. {"project": "veles"}.')]
Cursor = Annotated[OptId, optional("The previous page's next_cursor. Omit to start the walk.")]
PageSize = Annotated[Integer, _doc(
    f"Page size (default {limits.DEFAULT_LIST_LIMIT}, clamped server-side).")]
ListFilter = Annotated[OptObject, optional(
    "Keep only facts whose metadata equals every given key (pages may be sparse; keep following "
    "next_cursor).")]
History = Annotated[Boolean, _doc(
    "Also list every older version of each fact found (its supersedes chain), newest first.")]
IncludeInternal = Annotated[Boolean, _doc(
    "Also list graph scaffolding and reserved _veles_* keys, verbatim.")]
IncludeArchived = Annotated[Boolean, _doc(
    "Also list facts a consolidation run archived (merged duplicates, old superseded versions).")]


def register(mcp: ToolRegistry, app: AppContext) -> None:
    """Install the eleven memory tools on ``mcp``, bound to ``app.memory``.

    Every tool is async: reads run on the Runtime's worker pool; writes are prepared on the event
    loop (on the pool when a model embeds the fact) and their commit awaited there. None waits
    for the embedding model: while it loads, a write is stored without its vector (embedded
    later) and recall ranks by text alone, saying so in ``warnings``."""
    rt = app.runtime
    memory = app.memory

    @mcp.tool(annotations=WRITE)
    async def remember(fact: Fact, links: Links, metadata: Metadata, ttl_seconds: TtlSeconds) -> Result:
        """Store a fact in durable local memory. Returns { id, id_str }; the id is derived from the text, so re-remembering identical text updates it in place."""
        plain = None if links is None else [{"target": ln.target, "relation": ln.relation} for ln in links]
        author = request_author()
        result = await rt.write(memory.submit_remember, fact, links=plain, metadata=metadata,
                                ttl_seconds=ttl_seconds, author=author,
                                offload=not memory.embedder.inline)
        return tool_result(result.to_dict())

    @mcp.tool(annotations=READ)
    async def recall(*, query: Query, k: K = limits.DEFAULT_RECALL_K, filter: Filter,
                     history: History = False) -> Result:
        """Semantic (vector) retrieval with an optional exact-match metadata filter. Returns { memories: [ { id, id_str, score, content, metadata } ] }; ranking blends similarity with learned confidence, score stays the raw similarity."""
        return await rt.run(lambda: tool_result(memory.recall(
            query, k=k, filter=filter, history=history).to_dict()))

    @mcp.tool(annotations=READ)
    async def recall_where(*, query: Query, filters: Filters, k: K = limits.DEFAULT_RECALL_K) -> Result:
        """Semantic recall constrained by typed column predicates (ranges and comparisons, type-strict). Returns { memories }, most similar first, same envelope as recall."""
        plain = [{"field": p.field, "op": p.op, "value": p.value} for p in filters]
        return await rt.run(lambda: tool_result(memory.recall_where(query, plain, k=k).to_dict()))

    @mcp.tool(annotations=READ)
    async def recall_fused(
        *,
        query: Query,
        k: K = limits.DEFAULT_RECALL_K,
        filter: Filter,
        hops: Hops = limits.DEFAULT_FUSED_HOPS,
        graph_boost: GraphBoost = limits.DEFAULT_GRAPH_BOOST,
        pool: Pool,
        date_field: DateField,
    ) -> Result:
        """recall plus a graph walk from the top vector hit that folds connected facts into the ranking. Returns { memories, dated_context?, now? } (the last two only with date_field and at least one dated fact)."""
        return await rt.run(lambda: tool_result(memory.recall_fused(
            query, k=k, filter=filter, hops=hops, graph_boost=graph_boost, pool=pool,
            date_field=date_field).to_dict()))

    @mcp.tool(annotations=CUMULATIVE)
    async def feedback(
        id: Annotated[Id, _doc("The recalled memory to reinforce (decimal string or number).")],
        success: Success,
    ) -> Result:
        """Reinforce a recalled memory with an outcome. Returns { id, id_str, confidence }, the new learned confidence in [0, 1] that recall re-ranks by."""
        return tool_result((await rt.write(memory.submit_feedback, id, success)).to_dict())

    @mcp.tool(annotations=WRITE)
    async def relate(
        from_: Annotated[Id, Field(alias="from",
                                   description="The memory the link points from (decimal string or number).")],
        to: Annotated[Id, _doc("The memory the link points to (decimal string or number).")],
        relation: Relation,
    ) -> Result:
        """Create a typed, directional edge between two existing memories (why follows outgoing edges: point from at the decision, to at its evidence). Returns { edge_id, edge_id_str }; idempotent per (from, relation, to)."""
        return tool_result((await rt.write(memory.submit_relate, from_, to, relation)).to_dict())

    @mcp.tool(annotations=DELETE)
    async def unrelate(
        from_: Annotated[Id, Field(alias="from", description="The side the link points from, as given to relate.")],
        to: Annotated[Id, _doc("The side the link points to.")],
        relation: Annotated[str, _doc("The label of the link to remove.")],
    ) -> Result:
        """Remove a typed edge, relate's exact undo; the memories stay. Returns { found, removed }; an absent edge answers found: false."""
        return tool_result((await rt.write(memory.submit_unrelate, from_, to, relation)).to_dict())

    @mcp.tool(annotations=DELETE)
    async def forget(id: Annotated[Id, _doc("As returned by remember or recall (decimal string or number).")]) -> Result:
        """Permanently delete a memory by id, with its graph links. Returns { id, id_str, found }; found: false means nothing was stored under that id (a no-op)."""
        return tool_result((await rt.write(memory.submit_forget, id)).to_dict())

    @mcp.tool(annotations=READ)
    async def why(*, decision: Decision, max_hops: MaxHops = limits.DEFAULT_WHY_HOPS, filter: SeedFilter) -> Result:
        """Find the best-matching memory and return the subgraph reachable from it through outgoing typed links. Returns { nodes: [ { id, id_str, content, hop } ], edges: [ { from, from_str, to, to_str, relation } ], truncated }; the seed is hop 0."""
        return await rt.run(lambda: tool_result(memory.why(decision, max_hops=max_hops, filter=filter).to_dict()))

    @mcp.tool(annotations=READ)
    async def list_memories(
        *,
        cursor: Cursor,
        limit: PageSize = limits.DEFAULT_LIST_LIMIT,
        filter: ListFilter,
        include_internal: IncludeInternal = False,
        include_archived: IncludeArchived = False,
    ) -> Result:
        """Audit the store: walk every stored fact page by page, ids ascending. Returns { memories: [ { id, id_str, content, metadata } ], next_cursor }; next_cursor is a decimal string, null ends the walk."""
        return await rt.run(lambda: tool_result(memory.list_memories(
            cursor=cursor, limit=limit, filter=filter, include_internal=include_internal,
            include_archived=include_archived).to_dict()))

    @mcp.tool(annotations=READ)
    async def memory_status() -> Result:
        """Report health and configuration. Returns { embedder, provenance, extraction, memory }: the running embedder, what filled the store, extraction state and corpus size. Call it at session start."""
        return await rt.run(lambda: tool_result(memory.memory_status().to_dict()))

    for name in COUNTED_TOOLS:
        deprecated_alias(mcp, name, alias="limit", canonical="k")

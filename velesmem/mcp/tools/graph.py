"""The entity-graph tools: entity, remember_extracted, extraction_status."""

from __future__ import annotations

from typing import Annotated, Any

from velesmem.mcp.registry import ToolRegistry
from pydantic import Field

from velesmem import limits
from velesmem.mcp.annotations import READ, WRITE
from velesmem.mcp.app import AppContext
from velesmem.mcp.author import request_author
from velesmem.mcp.results import tool_result
from velesmem.mcp.wire import OptObject, OptString, optional

Result = dict[str, Any]

ORDER = 1  # after the memory tools


def register(mcp: ToolRegistry, app: AppContext) -> None:
    """Install entity, remember_extracted and extraction_status, bound to the Runtime."""
    rt = app.runtime

    @mcp.tool(annotations=READ)
    async def entity(
        name: Annotated[str, Field(description="The entity, matched case-insensitively (trimmed, lowercased).")],
    ) -> Result:
        """Everything the auto-built graph knows about one named entity: attributes merged onto it, relations (typed edges leaving it) and relations_in (edges pointing at it, each naming its source) — read both: "who is Theo's sister?" is in his relations_in. Returns { found, id, id_str, name, attributes, relations, relations_in, relations_truncated, relations_in_truncated }; each direction is capped at 64 within a 4096-edge scan, and a cut is reported."""
        return await rt.run(lambda: tool_result(app.memory.entity(name).to_dict()))

    @mcp.tool(annotations=WRITE)
    async def remember_extracted(
        text: Annotated[str, Field(description=f"Raw text, at most {limits.MAX_FACT_BYTES // limits.MIB} MiB.")],
        metadata: Annotated[OptObject, optional("Applied to every extracted fact.")],
        extractor: Annotated[OptString, optional('outline (directives you write, no model), ollama or openai; omit for the daemon default (VELESDB_MEMORY_EXTRACTOR).')],
        idempotency_key: Annotated[OptString, optional(f"Retry key, at most {limits.MAX_IDEMPOTENCY_KEY_BYTES} bytes: the same key and payload reuse one job; the same key with another payload is refused.")],
    ) -> Result:
        """Durably accept a passage for background extraction and return before any model call: atomic facts are stored and the fact-topic graph is built, so why connects them with no relate. You are a model: write the directives yourself and send them with extractor "outline" — one per line: `fact: text | topic, topic`, `edge: subject | predicate | object`, `attr: entity | key | <JSON value>`; any other line is a fact with no topics. Returns { request_id, state, reused }; poll extraction_status with request_id."""
        author = request_author()
        return await rt.run(lambda: rt.extraction.remember_extracted(
            text, metadata=metadata, extractor=extractor, idempotency_key=idempotency_key,
            author=author))

    @mcp.tool(annotations=READ)
    async def extraction_status(
        request_id: Annotated[str, Field(description="The 64-character lowercase hexadecimal id from remember_extracted's receipt.")],
    ) -> Result:
        """Read the durable result of remember_extracted. Returns { request_id, state, ids, ids_str, skipped_over_cap, error }: state is accepted, running, committed or failed; on committed, ids (relay ids_str) are in extraction order and skipped_over_cap counts facts over the 2048-byte cap; on failed, error says why."""
        return await rt.run(lambda: rt.extraction.extraction_status(request_id))


_SAMPLE_KEY = "sample-extraction-1"
# Valid arguments for the MCP schema tests (remember_extracted runs before extraction_status).
EXAMPLES: dict[str, dict[str, Any]] = {
    "entity": {"name": "canary"},
    "remember_extracted": {"text": "fact: the canary runs at 2% traffic | canary\n"
                                   "edge: canary | depends_on | load balancer",
                           "metadata": {"project": "canary"}, "extractor": "outline",
                           "idempotency_key": _SAMPLE_KEY},
    "extraction_status": {"request_id": __import__("hashlib").sha256(
        ("key\x1f" + _SAMPLE_KEY).encode()).hexdigest()},
}

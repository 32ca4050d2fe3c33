"""The live tool surface the skills are checked against: the served schemas (``tools/list``) and
the result fields each tool really returns, observed by calling every tool through a real MCP
client on a temporary store, with inputs that make the optional fields appear (a dated recall,
an externalized fragment, a committed extraction, a saved working context)."""

from __future__ import annotations

from typing import Any

from fastmcp import Client
from skill_refs import Surface, param_paths, result_paths

from tests.support import DEADLINE_S, deadline_scale, wait_for_async
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from tests.support.mcp_memory import in_memory
from velesmem.runtime import Runtime

EXTRACTION_DEADLINE_S = 20.0
LOG = "\n".join(["GET /health 200"] * 40 + ["GET /mcp 500 upstream timeout after 8000 ms"])
CODE = "```python\ndef retry_cap() -> int:\n    return 3\n```"
PROSE = "\n\n".join(f"Paragraph {i} of the design notes about upload retries and batteries."
                    for i in range(30))
TRANSCRIPT = ("user: why do we cap upload retries?\n"
              "assistant: because mobile clients drained their batteries (OPS-88).\n")


async def collect(runtime: Runtime) -> Surface:
    """Call every tool once or twice; return the schemas' parameters and the results' fields."""
    results: dict[str, set[str]] = {}
    async with Client(in_memory(build_server(AppContext(runtime)))) as client:
        tools = await client.list_tools()
        params = {t.name: param_paths(t.input_schema) for t in tools}

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            data = result.structured_content
            assert isinstance(data, dict), (tool, result)
            results.setdefault(tool, set()).update(result_paths(data))
            return data

        await call("memory_status")
        await call("migration_status")  # start, cancel and recover would change the store
        ticket = (await call("remember", fact="OPS-88: mobile clients drained their batteries",
                             metadata={"project": "demo", "kind": "incident"}))["id_str"]
        pr = (await call("remember", fact="PR #57 adds the retry cap",
                         links=[{"target": ticket, "relation": "fixes"}]))["id_str"]
        decision = (await call("remember", fact="we cap upload retries at three, see PR #57",
                               metadata={"project": "demo", "kind": "decision"}))["id_str"]
        await call("relate", **{"from": decision, "to": pr, "relation": "implemented_by"})
        await call("unrelate", **{"from": decision, "to": ticket, "relation": "none"})
        # the entity below reads the hubs the autograph links in the background
        assert runtime.autograph.wait_idle(DEADLINE_S * deadline_scale())
        await call("recall", query="upload retries", filter={"project": "demo"})
        await call("recall_where", query="upload retries",
                   filters=[{"field": "_veles_date", "op": "ge", "value": 20000101}])
        await call("recall_fused", query="upload retries", hops=2, date_field="_veles_date")
        await call("why", decision="why do we cap upload retries")
        await call("feedback", id=decision, success=True)
        await call("list_memories", limit=1)
        await call("entity", name="#57")
        job = await call("remember_extracted", extractor="outline",
                         text="fact: the soak test runs nightly | soak test\n"
                              "edge: soak test | covers | retries")
        async def finished() -> bool:
            status = await call("extraction_status", request_id=job["request_id"])
            return status["state"] in ("committed", "failed")

        await wait_for_async(finished, EXTRACTION_DEADLINE_S, "the extraction to finish",
                             poll_s=0.05)
        extra = (await call("remember", fact="a fact to forget"))["id_str"]
        await call("forget", id=extra)

        request = {"query": "upload retries timeout", "token_budget": 120, "project": "demo",
                   "fragments": [{"content": LOG, "kind": "log"}, {"content": CODE, "kind": "code"},
                                 {"content": PROSE, "kind": "text"}],
                   "memory_scope": {"project": "demo", "k": 2}}
        compiled = await call("compile_context", **request)
        handles = compiled["retrieval_handles"]
        assert handles, "the compile set nothing aside: the scenario needs a handle"
        await call("explain_compilation", request=request, fragment_id=handles[0]["fragment_id"])
        await call("retrieve_context_source", handle=handles[0]["handle"])
        await call("compile_transcript", transcript=TRANSCRIPT, query="retries", token_budget=200)
        await call("context_savings", project="demo")
        await call("suggest_budget", target_model="gpt-4o", reserve_tokens=1000)
        working = {"goal": "ship the retry cap", "decisions": [{"text": "cap at three",
                                                                "memory_id": decision}],
                   "exact_evidence": [{"text": "the log", "handle": handles[0]["handle"]}]}
        await call("save_working_context", project="demo", session="s1", working=working)
        await call("save_working_context", project="demo", session="s2", working=working)
        await call("load_working_context", project="demo", session="s1")
        await call("list_working_contexts", project="demo")
    return Surface(params=params, results=results)

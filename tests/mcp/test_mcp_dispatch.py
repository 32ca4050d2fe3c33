"""``tools/call`` served straight to the tool (``velesmem.mcp.dispatch``) answers exactly what
FastMCP's own handler, behind the two middlewares, answers: the same results, the same JSON-RPC
errors (code, message, data) for bad arguments, aliases, both spellings, unknown tools and
parameters, and failures inside a tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from mcp import MCPError

from velesmem.config import Settings
from velesmem.mcp.app import AppContext
from velesmem.mcp.dispatch import TOOLS_CALL, DirectToolCalls
from velesmem.mcp.server import build_server

pytestmark = pytest.mark.anyio

# (tool, arguments): each answered by both handlers, in this order, on stores that start equal.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("remember", {"fact": "the build uses ninja", "metadata": {"project": "veles"}}),
    ("remember", {"fact": "ninja is fast", "links": [{"target": "1", "relation": "about"}]}),
    ("remember", {"fact": ""}),
    ("remember", {"fact": 7}),
    ("remember", {}),
    ("remember", {"fact": "x", "colour": "red"}),
    ("remember", {"fact": "x", "ttl_seconds": "soon"}),
    ("recall", {"query": "build tool", "k": 3}),
    ("recall", {"query": "build tool", "limit": 2}),
    ("recall", {"query": "build tool", "limit": "many"}),
    ("recall", {"query": "build tool", "k": 2, "limit": 2}),
    ("recall", {"query": "build tool", "k": -1}),
    ("recall_where", {"query": "build", "filters": [{"field": "project", "op": "eq", "value": "veles"}]}),
    ("recall_where", {"query": "build", "filters": [{"field": "project", "op": "like", "value": 1}]}),
    ("forget", {"id": "not a number"}),
    ("forget", {"id": "18446744073709551615"}),
    ("list_memories", {"limit": 10}),
    ("memory_status", {}),
    ("no_such_tool", {"x": 1}),
    ("context_savings", {}),
]


@pytest.fixture
def twin_servers(tmp_path: Path) -> Any:
    """Two servers on two fresh stores: one as built (direct), one with FastMCP's handler back."""
    import velesmem

    opened = []
    servers = []
    for name in ("direct", "fastmcp"):
        settings = Settings.from_env().with_overrides(path=tmp_path / name)
        runtime = velesmem.open(settings.path, settings=settings)
        opened.append(runtime)
        servers.append(build_server(AppContext(runtime)))
    _restore_fastmcp_handler(servers[1])
    try:
        yield servers
    finally:
        for runtime in opened:
            runtime.close()


def _restore_fastmcp_handler(server: FastMCP) -> None:
    low = server._mcp_server
    entry = low.get_request_handler(TOOLS_CALL)
    assert entry is not None and isinstance(entry.handler, DirectToolCalls)
    low.add_request_handler(TOOLS_CALL, entry.params_type, entry.handler._fallback)


async def _answer(client: Client[Any], tool: str, arguments: dict[str, Any]) -> Any:
    try:
        result = await client.session.call_tool(tool, arguments)
    except MCPError as exc:
        return ("error", exc.error.code, exc.error.message, exc.error.data)
    return ("result", result.model_dump(mode="json"))


async def test_built_server_serves_tools_call_directly(server: FastMCP) -> None:
    entry = server._mcp_server.get_request_handler(TOOLS_CALL)
    assert entry is not None and isinstance(entry.handler, DirectToolCalls)


async def test_direct_calls_answer_what_fastmcp_answers(twin_servers: list[FastMCP]) -> None:
    direct, fastmcp = twin_servers
    async with Client(direct) as a, Client(fastmcp) as b:
        for tool, arguments in CALLS:
            got, want = await _answer(a, tool, arguments), await _answer(b, tool, arguments)
            assert got == want, f"{tool}({arguments})"
        kinds = {(await _answer(a, tool, arguments))[0] for tool, arguments in CALLS}
    assert kinds == {"result", "error"}  # both paths exercised

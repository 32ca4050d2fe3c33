"""``tools/list`` and ``tools/call`` as the SDK's low-level ``Server`` serves them
(``velesmem.mcp.dispatch``): what a session sees is fixed at registration, never decided by
whoever called first, and each tool's one validator exists before any call."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import INVALID_PARAMS, call, ok

from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_tools, server_for
from tests.support.mcp_memory import in_memory

pytestmark = pytest.mark.anyio


async def test_a_first_caller_asking_for_unknown_tools_changes_nothing_another_session_sees(
        app: AppContext) -> None:
    server = server_for(build_tools(app))
    async with Client(in_memory(server)) as first, Client(in_memory(server)) as second:
        for name in ("no_such_tool", "recall ", "RECALL"):
            refused = await call(first, name, {})
            assert refused.error is not None and refused.error.error.code == INVALID_PARAMS
        listed_first = [t.name for t in await first.list_tools()]
        listed_second = [t.name for t in await second.list_tools()]
        assert listed_first == listed_second and "recall" in listed_second
        await ok(second, "remember", {"fact": "the build uses ninja"})
        assert (await ok(first, "recall", {"query": "ninja", "k": 1}))["memories"]


async def test_every_tool_is_validated_by_its_own_validator_built_at_registration(app: AppContext) -> None:
    tools = build_tools(app)
    for name in tools.names():
        tool = tools.get(name)
        assert tool is not None and tool.validator is not None, name
    recall = tools.get("recall")
    assert recall is not None
    assert recall.validate({"query": "x", "k": "3"}) == {"query": "x", "k": 3, "filter": None,
                                                          "history": False}
    assert recall.aliases == {"limit": "k"}
    relate = tools.get("relate")
    assert relate is not None
    assert relate.validate({"from": "1", "to": 2, "relation": "r"}) == {"from_": 1, "to": 2, "relation": "r"}


async def test_a_tool_result_carries_the_dict_as_structured_content_and_as_json_text(server: Any) -> None:
    async with Client(server) as client:
        result = await client.session.call_tool("remember", {"fact": "ninja is fast"})
    assert not result.is_error
    assert result.structured_content is not None and set(result.structured_content) == {"id", "id_str"}
    text = result.content[0].text  # type: ignore[union-attr]
    ids = result.structured_content
    assert text == f'{{"id":{ids["id"]},"id_str":"{ids["id_str"]}"}}'


async def test_the_sdk_reads_a_tools_input_schema_from_the_registry_not_through_tools_list(
        app: AppContext) -> None:
    tools = build_tools(app)
    server = server_for(tools)
    assert server.get_tool_input_schema is not None
    recall = tools.get("recall")
    assert recall is not None
    assert server.get_tool_input_schema("recall") == recall.definition.input_schema
    assert server.get_tool_input_schema("no_such_tool") is None


async def test_the_shipped_definitions_are_what_fastmcp_builds_from_the_tools(app: AppContext) -> None:
    shipped, built = build_tools(app), build_tools(app, shipped=False)
    assert shipped.names() == built.names()
    for name in built.names():
        ours, fresh = shipped.get(name), built.get(name)
        assert ours is not None and fresh is not None
        assert ours.definition == fresh.definition, f"{name}: run `python3 -m velesmem.mcp.docs`"
        assert ours.params == fresh.params and ours.fingerprint == fresh.fingerprint


async def test_a_tool_whose_signature_changed_is_not_served_its_stale_shipped_definition() -> None:
    from velesmem.mcp.registry import ToolRegistry, shipped_definitions

    assert "recall" in shipped_definitions()
    tools = ToolRegistry()

    async def recall(query: str, k: int = 5, brand_new: bool = False) -> dict[str, Any]:
        """Recall, with a parameter the shipped definition does not know."""
        return {}

    tool = tools.add(recall)
    assert tool.fingerprint != shipped_definitions()["recall"]["fingerprint"]
    assert "brand_new" in tool.definition.input_schema["properties"]
    assert tool.params == ["query", "k", "brand_new"]


def test_an_unreadable_definitions_file_means_every_tool_is_built(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from velesmem.mcp import registry

    broken = tmp_path / "definitions.json"
    broken.write_text("<<<<<<< a merge conflict\n", encoding="utf-8")
    monkeypatch.setattr(registry, "DEFINITIONS_FILE", broken)
    registry.shipped_definitions.cache_clear()
    try:
        assert registry.shipped_definitions() == {}
        tools = registry.ToolRegistry()

        async def remember(fact: str) -> dict[str, Any]:
            """Store a fact."""
            return {}

        assert tools.add(remember).definition.input_schema["required"] == ["fact"]
    finally:
        registry.shipped_definitions.cache_clear()

"""The memory tools over an in-memory MCP session against a real MemoryService."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from mcp_helpers import (
    HIGH_FACT,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MID_FACT,
    TWO_53,
    TWO_63,
    U64_MAX,
    call,
    ok,
    seed,
)

from velesmem import limits
from velesmem.errors import Internal, NotFound
from velesmem.ids import fact_id
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_tools, server_for
from tests.support.mcp_memory import in_memory

pytestmark = pytest.mark.anyio

COUNTED = ("recall", "recall_where", "recall_fused")


def _counted_args(tool: str) -> dict[str, Any]:
    args: dict[str, Any] = {"query": "canary deploy"}
    if tool == "recall_where":
        args["filters"] = [{"field": "n", "op": "ge", "value": 0}]
    return args


async def test_every_memory_tool_round_trips(server: FastMCP) -> None:
    async with Client(server) as client:
        s = await seed(client)
        recalled = await ok(client, "recall", {"query": MID_FACT, "k": 3})
        assert recalled["memories"][0]["id_str"] == str(s.mid)
        assert recalled["memories"][0]["content"] == MID_FACT
        assert recalled["memories"][0]["metadata"]["project"] == "canary"

        where = await ok(client, "recall_where", {"query": "canary", "filters": [{"field": "n", "op": "ge", "value": 2}]})
        assert [m["id_str"] for m in where["memories"]] == [str(s.high)]

        fused = await ok(client, "recall_fused", {"query": MID_FACT, "k": 5, "date_field": "_veles_date"})
        assert str(s.high) in {m["id_str"] for m in fused["memories"]}  # reached through the edge
        assert fused["dated_context"].startswith("- [") and fused["now"]

        why = await ok(client, "why", {"decision": MID_FACT})
        assert why["nodes"][0] == {"id": s.mid, "id_str": str(s.mid), "content": MID_FACT, "hop": 0}
        assert {"from_str": str(s.mid), "to_str": str(s.high), "relation": "depends_on"}.items() <= why["edges"][0].items()

        before = (await ok(client, "feedback", {"id": str(s.mid), "success": True}))["confidence"]
        after = (await ok(client, "feedback", {"id": s.mid, "success": "false"}))["confidence"]
        assert 0.0 <= after < before <= 1.0

        edge = await ok(client, "relate", {"from": str(s.high), "to": str(s.spare), "relation": "cites"})
        assert edge["edge_id_str"] == str(edge["edge_id"])
        again = await ok(client, "relate", {"from": s.high, "to": s.spare, "relation": "cites"})
        assert again == edge  # idempotent per triple
        assert await ok(client, "unrelate", {"from": str(s.high), "to": str(s.spare), "relation": "cites"}) == {"found": True, "removed": 1}
        assert (await ok(client, "unrelate", {"from": str(s.high), "to": str(s.spare), "relation": "cites"}))["found"] is False

        listed = await ok(client, "list_memories", {"limit": 2})
        assert len(listed["memories"]) == 2 and listed["next_cursor"] is not None
        rest = await ok(client, "list_memories", {"cursor": listed["next_cursor"], "limit": 10})
        ids = [m["id"] for m in listed["memories"] + rest["memories"]]
        assert ids == sorted(ids) and set(ids) == {s.mid, s.high, s.spare} and rest["next_cursor"] is None

        status = await ok(client, "memory_status", {})
        assert status["memory"]["facts"] == 3
        assert status["embedder"]["dimension"] == 384

        assert await ok(client, "forget", {"id": str(s.spare)}) == {"id": s.spare, "id_str": str(s.spare), "found": True}
        assert (await ok(client, "forget", {"id": str(s.spare)}))["found"] is False


async def test_u64_ids_above_2_53_and_2_63_survive_as_strings(server: FastMCP) -> None:
    async with Client(server) as client:
        s = await seed(client)
        assert TWO_53 < s.mid < TWO_63 < s.high
        assert s.mid == fact_id(MID_FACT) and s.high == fact_id(HIGH_FACT)
        # the raw JSON text carries the exact digits in the *_str twin
        raw = await client.session.call_tool("remember", {"fact": HIGH_FACT})
        text = raw.content[0].text
        assert f'"id_str":"{s.high}"' in text.replace(" ", "")
        assert json.loads(text)["id_str"] == str(s.high)
        # ids travel back in as strings (what a float-lossy client relays) or exact numbers
        edge = await ok(client, "relate", {"from": str(s.high), "to": str(s.mid), "relation": "r"})
        assert edge == await ok(client, "relate", {"from": s.high, "to": s.mid, "relation": "r"})
        why = await ok(client, "why", {"decision": HIGH_FACT, "max_hops": "1"})
        assert {"from_str": str(s.high), "to_str": str(s.mid)}.items() <= why["edges"][0].items()
        # a float-rounded id is simply another id: refused by relate, unknown to forget
        rounded = int(float(s.high))
        assert rounded != s.high
        assert (await ok(client, "forget", {"id": rounded}))["found"] is False
        assert (await ok(client, "forget", {"id": U64_MAX}))["found"] is False
        gone = await ok(client, "forget", {"id": str(s.high)})
        assert gone == {"id": s.high, "id_str": str(s.high), "found": True}


@pytest.mark.parametrize("tool", COUNTED)
async def test_limit_is_a_hidden_deprecated_alias_of_k(server: FastMCP, tool: str) -> None:
    async with Client(server) as client:
        await seed(client)
        listed = {t.name: t for t in await client.list_tools()}[tool]
        assert "k" in listed.input_schema["properties"]
        assert "limit" not in json.dumps(listed.input_schema)
        by_k = await ok(client, tool, {**_counted_args(tool), "k": 1})
        by_limit = await ok(client, tool, {**_counted_args(tool), "limit": 1})
        by_limit_str = await ok(client, tool, {**_counted_args(tool), "limit": "1"})
        assert len(by_k["memories"]) == 1
        assert by_limit == by_k == by_limit_str
        both = await call(client, tool, {**_counted_args(tool), "k": 1, "limit": 1})
        assert both.error is not None and both.error.error.code == INVALID_PARAMS
        assert "'k'" in both.error.error.message and "'limit'" in both.error.error.message
        bad = await call(client, tool, {**_counted_args(tool), "limit": "abc"})
        assert bad.wire_rejected("limit"), bad.describe()  # reported under the name that was sent


async def test_limit_is_no_alias_where_it_is_not_declared(server: FastMCP) -> None:
    async with Client(server) as client:
        outcome = await call(client, "why", {"decision": "x", "limit": 3})
        assert outcome.wire_rejected("limit")
        assert "unknown parameter" in outcome.error.error.message  # type: ignore[union-attr]
        # list_memories' limit is its own, real parameter
        await ok(client, "list_memories", {"limit": "3"})


async def test_k_above_the_cap_is_clamped(server: FastMCP) -> None:
    """k is "capped at 1000" (the contract): a bigger k is read as 1000, not refused."""
    async with Client(server) as client:
        await ok(client, "remember", {"fact": "one clamped fact"})
        for tool in ("recall", "recall_fused"):
            got = await ok(client, tool, {"query": "clamped", "k": limits.MAX_RECALL_LIMIT + 1})
            assert [m["content"] for m in got["memories"]] == ["one clamped fact"]
        outcome = await call(client, "recall", {"query": "x", "k": 0})
        assert outcome.error is not None and outcome.error.error.code == INVALID_PARAMS


async def test_string_slots_are_never_reparsed_as_json(server: FastMCP) -> None:
    async with Client(server) as client:
        stored = await ok(client, "remember", {"fact": "6"})
        listed = await ok(client, "list_memories", {})
        assert [m["content"] for m in listed["memories"]] == ["6"]
        assert stored["id"] == fact_id("6")
        await ok(client, "remember", {"fact": '{"not": "an object"}'})
        number = await call(client, "remember", {"fact": 6})
        assert number.wire_rejected("fact")
        assert (await call(client, "relate", {"from": "1", "to": "2", "relation": 7})).wire_rejected("relation")


async def test_object_and_array_slots_accept_their_json_encoded_string(server: FastMCP) -> None:
    async with Client(server) as client:
        s = await seed(client)
        await ok(client, "remember", {
            "fact": "encoded containers", "metadata": '{"project": "enc", "n": 9}',
            "links": json.dumps([{"target": str(s.mid), "relation": "about"}]),
        })
        listed = await ok(client, "list_memories", {"filter": '{"project": "enc"}'})
        assert listed["memories"][0]["metadata"]["n"] == 9
        why = await ok(client, "why", {"decision": "encoded containers", "max_hops": 1, "filter": {"project": "enc"}})
        assert [e["to_str"] for e in why["edges"]] == [str(s.mid)]
        where = await ok(client, "recall_where", {"query": "encoded containers", "filters": '[{"field": "n", "op": "eq", "value": 9}]'})
        assert [m["content"] for m in where["memories"]] == ["encoded containers"]
        nested = await ok(client, "recall_where", {"query": "encoded containers", "filters": ['{"field": "n", "op": "eq", "value": 9}']})
        assert nested == where
        for tool, args, field in [
            ("remember", {"fact": "f", "metadata": "[1]"}, "metadata"),
            ("remember", {"fact": "f", "metadata": "{oops"}, "metadata"),
            ("remember", {"fact": "f", "links": '{"target": "1"}'}, "links"),
            ("recall", {"query": "q", "filter": 5}, "filter"),
            ("recall", {"query": "q", "filter": "[]"}, "filter"),
        ]:
            assert (await call(client, tool, args)).wire_rejected(field), (tool, args)


async def test_recall_where_values_are_compared_type_strictly(server: FastMCP) -> None:
    async with Client(server) as client:
        await ok(client, "remember", {"fact": "dated as a string", "metadata": {"ts": "20230601"}})
        as_number = await ok(client, "recall_where", {"query": "dated string", "filters": [{"field": "ts", "op": "eq", "value": 20230601}]})
        as_string = await ok(client, "recall_where", {"query": "dated string", "filters": [{"field": "ts", "op": "eq", "value": "20230601"}]})
        assert as_number["memories"] == [] and len(as_string["memories"]) == 1


async def test_domain_errors_are_real_json_rpc_errors_with_their_category(server: FastMCP) -> None:
    async with Client(server) as client:
        cases = [
            ("remember", {"fact": "x" * (limits.MAX_EMBEDDABLE_TEXT_BYTES + 1)}, "InvalidInput"),
            ("relate", {"from": "1", "to": "2", "relation": "r"}, "NotFound"),
            ("feedback", {"id": "12345", "success": True}, "NotFound"),
            ("recall_where", {"query": "q", "filters": [{"field": "bad field!", "op": "eq", "value": 1}]}, "InvalidInput"),
        ]
        for tool, args, category in cases:
            outcome = await call(client, tool, args)  # raises nothing: MCPError is captured
            assert outcome.error is not None, (tool, outcome.describe())
            assert outcome.error.error.code == INVALID_PARAMS, (tool, outcome.describe())
            assert outcome.error.error.data["category"] == category, (tool, outcome.describe())
        unknown = await call(client, "no_such_tool", {})
        assert unknown.error is not None and unknown.error.error.code == INVALID_PARAMS
        missing = await call(client, "remember", {})
        assert missing.wire_rejected("fact") and "fact: required" in missing.error.error.message  # type: ignore[union-attr]


async def test_internal_errors_and_crashes_are_json_rpc_internal_error(app: AppContext) -> None:
    tools = build_tools(app)

    @tools.tool()
    async def fails_internally() -> dict:
        """Test-only tool: a fault on our side."""
        raise Internal("the store is on fire")

    @tools.tool()
    async def crashes() -> dict:
        """Test-only tool: an unexpected exception."""
        raise ZeroDivisionError("division by zero")

    @tools.tool()
    async def not_found() -> dict:
        """Test-only tool: a NotFound raised by a service."""
        raise NotFound("memory 7 does not exist")

    async with Client(in_memory(server_for(tools))) as client:
        internal = await call(client, "fails_internally", {})
        assert internal.error is not None
        assert (internal.error.error.code, internal.error.error.message) == (INTERNAL_ERROR, "the store is on fire")
        assert internal.error.error.data == {"category": "Internal"}
        crash = await call(client, "crashes", {})
        assert crash.error is not None and crash.error.error.code == INTERNAL_ERROR
        assert "ZeroDivisionError" in crash.error.error.message
        missing = await call(client, "not_found", {})
        assert missing.error is not None and missing.error.error.code == INVALID_PARAMS
        assert missing.error.error.data == {"category": "NotFound"}

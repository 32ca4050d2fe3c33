"""Golden wire tests: what a client sees must not move when the MCP layer's plumbing changes.

``tools/list`` equals the committed ``docs/tools.json``, and the JSON-RPC error of each error
class (wire validation, deprecated alias, unknown tool, domain InvalidInput / NotFound, internal)
is byte-identical to its recording in ``tests/mcp/golden/errors.json``. Re-record deliberately
with ``VELESMEM_RECORD_GOLDEN=1`` (and say why in the commit).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import call

from velesmem.mcp.app import AppContext
from velesmem.mcp.docs import DOCS_DIR, JSON_NAME

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden" / "errors.json"
RECORD = os.environ.get("VELESMEM_RECORD_GOLDEN") == "1"
MISSING_ID = "12345678901234567890"  # a u64 above 2^63 that no fact has

# name -> (tool, arguments): one call per error class the wire answers with.
ERROR_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "validation_wrong_scalar": ("recall", {"query": "x", "k": "abc"}),
    "validation_float_for_integer": ("recall", {"query": "x", "k": 1.5}),
    "validation_unknown_parameter": ("recall", {"query": "x", "bogus": 1}),
    "validation_missing_required": ("remember", {}),
    "validation_nested_id": ("remember", {"fact": "x", "links": [{"target": "abc", "relation": "r"}]}),
    "validation_nested_extra_key": ("remember", {"fact": "x", "links": [{"target": "1", "relation": "r", "x": 1}]}),
    "validation_bad_enum": ("recall_where", {"filters": [{"field": "a", "op": "like", "value": 1}]}),
    "validation_json_string_not_object": ("remember", {"fact": "x", "metadata": "[1]"}),
    "alias_sent_twice": ("recall", {"query": "x", "k": 3, "limit": 3}),
    "alias_bad_value": ("recall", {"query": "x", "limit": "abc"}),
    "unknown_tool": ("no_such_tool", {}),
    "domain_invalid_input": ("remember", {"fact": "x" * 3000}),
    "domain_reserved_metadata": ("remember", {"fact": "x", "metadata": {"_veles_author": "me"}}),
    "domain_not_found": ("relate", {"from": MISSING_ID, "to": "1", "relation": "r"}),
    "internal_error": ("recall", {"query": "boom"}),
}


def _break_recall(app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inject an internal fault: recall raises an unexpected exception."""

    def recall(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(app.memory, "recall", recall)


async def _envelopes(server: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(server) as client:
        for name, (tool, arguments) in ERROR_CASES.items():
            outcome = await call(client, tool, arguments)
            assert outcome.error is not None, f"{name}: {outcome.describe()}"
            out[name] = {"tool": tool, "arguments": arguments,
                         "error": outcome.error.error.model_dump(mode="json", by_alias=True, exclude_none=True)}
    return out


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


async def test_tools_list_equals_the_committed_tools_json(server: Any) -> None:
    committed = json.loads((DOCS_DIR / JSON_NAME).read_text(encoding="utf-8"))
    async with Client(server) as client:
        tools = await client.list_tools()
    live = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    assert [t["name"] for t in live] == [t["name"] for t in committed["tools"]]
    for got, want in zip(live, committed["tools"]):
        assert _dump(got) == _dump(want), got["name"]


async def test_every_error_class_answers_the_recorded_json_rpc_error_byte_for_byte(
        server: Any, app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    _break_recall(app, monkeypatch)
    got = _envelopes(server)
    live = await got
    if RECORD:
        GOLDEN.write_text(_dump(live), encoding="utf-8")
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(live) == sorted(recorded)
    for name in recorded:
        assert _dump(live[name]) == _dump(recorded[name]), name

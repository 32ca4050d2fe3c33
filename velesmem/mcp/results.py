"""Tool results built where the work ran, not on the event loop.

A tool's dict goes on the wire twice: as ``structuredContent`` and as a JSON text block.
``tool_result`` builds that ``CallToolResult`` in the worker thread that produced the dict, so a
large recall (k=1000) is serialised off the event loop and never blocks ``/health`` or another
connection; ``call_result`` builds it for a tool that returned a plain dict. The tool's declared
return type (``Result``) still sets its advertised output schema.
"""

from __future__ import annotations

from typing import Any, cast

import mcp_types
from pydantic import TypeAdapter

Result = dict[str, Any]

_JSON = TypeAdapter(Any)


def _text(payload: Result) -> str:
    """The compact JSON text block (values JSON cannot hold are sent as their ``str``)."""
    return _JSON.dump_json(payload, fallback=str).decode()


def call_result(value: Any) -> mcp_types.CallToolResult:
    """The ``CallToolResult`` for a tool's return value (a dict, or one ``tool_result`` built)."""
    if isinstance(value, mcp_types.CallToolResult):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"a tool returned {type(value).__name__}, not an object")
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=_text(value))], structured_content=value)


def tool_result(payload: Result) -> Result:
    """The wire result of ``payload``, built now (typed as the dict it stands for)."""
    return cast(Result, call_result(payload))

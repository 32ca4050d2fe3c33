"""Tool results built where the work ran, not on the event loop.

FastMCP turns a tool's dict into its wire result on the event loop: a JSON round trip for the
structured content, a JSON text block, then the same round trip again inside ``ToolResult`` —
five passes over the result, every one blocking ``/health`` and every other connection while
a large recall (k=1000) is serialised. ``tool_result`` builds the same ``ToolResult`` (same text
block, same structured content, the same refusal of NaN and Infinity) in the worker thread that
produced the dict; FastMCP passes a ``ToolResult`` through unchanged, and the tool's declared
return type (``Result``) still sets its advertised output schema.
"""

from __future__ import annotations

from typing import Any, cast

from fastmcp.tools import ToolResult
from fastmcp.tools.base import default_serializer
from mcp.types import TextContent

Result = dict[str, Any]


def tool_result(payload: Result) -> Result:
    """The wire result FastMCP would make of ``payload`` (typed as the dict it stands for)."""
    text = TextContent(type="text", text=default_serializer(payload))
    return cast(Result, ToolResult(content=[text], structured_content=payload))

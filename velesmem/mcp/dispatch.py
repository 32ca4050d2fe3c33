"""The ``tools/list`` and ``tools/call`` request handlers of the SDK's low-level ``Server``.

``tools/list`` answers the definitions the registry built at registration. ``tools/call`` looks
the tool up, renames a deprecated argument spelling, validates the arguments with the tool's one
validator, awaits the tool, and turns its dict into a ``CallToolResult`` (unless the tool already
built one in its worker thread, see ``velesmem.mcp.results``). Every failure becomes the
contract's JSON-RPC error through ``velesmem.mcp.errors``, the one mapping place.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types
from mcp import MCPError
from mcp.server import ServerRequestContext
from pydantic import ValidationError as PydanticValidationError

from velesmem.mcp.aliases import rename_aliases, uses_alias
from velesmem.mcp.author import author_of, calling_as
from velesmem.mcp.errors import INTERNAL_ERROR, internal_error, mcp_error_for, unknown_tool
from velesmem.mcp.registry import RegisteredTool, ToolRegistry
from velesmem.mcp.results import call_result

log = logging.getLogger("velesmem.mcp")


class ToolHandlers:
    """The two tool request handlers over one registry (the same for every session)."""

    def __init__(self, tools: ToolRegistry) -> None:
        self._tools = tools
        self._listing = mcp_types.ListToolsResult(tools=tools.definitions())

    async def list_tools(self, _ctx: ServerRequestContext[Any],
                         _params: mcp_types.PaginatedRequestParams | None) -> mcp_types.ListToolsResult:
        return self._listing

    async def call_tool(self, ctx: ServerRequestContext[Any],
                        params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            raise unknown_tool(params.name)
        with calling_as(author_of(ctx.request)):
            try:
                return call_result(await self._call(tool, params.arguments or {}))
            except MCPError:
                raise
            except Exception as exc:
                error = mcp_error_for(exc, tool.name, tool.params)
                if error.error.code == INTERNAL_ERROR:  # our fault: one line, traceback at DEBUG
                    log.error("tool %s failed: %s", tool.name, error.error.message)
                    log.debug("tool %s traceback", tool.name, exc_info=exc)
                raise error from exc

    async def _call(self, tool: RegisteredTool, arguments: dict[str, Any]) -> Any:
        sent_as: dict[str, str] = {}
        if uses_alias(arguments, tool.aliases):
            arguments, sent_as = rename_aliases(tool.name, arguments, tool.aliases)
        try:
            kwargs = tool.validate(arguments)
        except PydanticValidationError as exc:  # reported under the names the caller sent
            raise mcp_error_for(exc, tool.name, tool.params, renamed=sent_as) from exc
        try:
            return await tool.fn(**kwargs)
        except PydanticValidationError as exc:  # raised inside the tool: not the caller's arguments
            raise internal_error(exc, tool.name) from exc

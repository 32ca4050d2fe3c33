"""``tools/call`` served straight to the tool, without FastMCP's per-call machinery.

FastMCP answers every call through a fresh ``Context``, a ``MiddlewareContext``, the middleware
chain, a provider lookup (``get_tool``: providers, transforms, visibility, auth), a telemetry
span, and a tool run that rebuilds its call wrappers and pydantic ``TypeAdapter`` on every call.
Measured in-process, that is most of a trivial call's CPU, and it runs on the event loop.

``DirectToolCalls`` replaces the SDK handler of ``tools/call`` with one that resolves each tool
once (through FastMCP's own ``get_tool``), keeps its validator, and runs it through the tool's own
``_run_body`` (the same strict pydantic validation, timeout and body-error tagging), then maps a
failure exactly as the two middlewares do (``AliasMiddleware`` inside ``ErrorMappingMiddleware``,
see ``velesmem.mcp.errors``). The result is the ``CallToolResult`` FastMCP's handler builds. A
name it cannot serve this way (an unknown name, a hashed name, a tool that is not a plain async
``FunctionTool``) goes to FastMCP's handler unchanged, so the wire stays the same either way.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, ToolError, ValidationError
from fastmcp.server.dependencies import without_injected_parameters
from fastmcp.server.server import _validation_error_summary
from fastmcp.tools import FunctionTool, ToolResult
from fastmcp.tools.function_tool import _wrap_body_errors
from fastmcp.utilities.exceptions import get_http_status_code
from fastmcp.utilities.json_schema import is_object_schema
from fastmcp.utilities.types import get_cached_typeadapter
from mcp import MCPError
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from velesmem.mcp.aliases import AliasMiddleware, rename_aliases, uses_alias
from velesmem.mcp.errors import INTERNAL_ERROR, mcp_error_for

log = logging.getLogger("velesmem.mcp")
# FastMCP's own records of a failing call, kept as they were (``quiet_expected_tool_errors``
# filters the traceback one).
fastmcp_log = logging.getLogger("fastmcp.server.server")

TOOLS_CALL = "tools/call"


@dataclass(frozen=True)
class _Direct:
    """One tool, resolved once: what its runs and its error messages need."""

    tool: FunctionTool
    adapter: TypeAdapter[Any]
    params: list[str]  # its parameter names, for "unknown parameter" messages


class DirectToolCalls:
    """The ``tools/call`` request handler (see module doc)."""

    def __init__(self, mcp: FastMCP, aliases: AliasMiddleware, fallback: Any) -> None:
        self._mcp = mcp
        self._aliases = aliases.aliases
        self._fallback = fallback  # FastMCP's handler
        self._tools: dict[str, _Direct | None] = {}

    async def __call__(self, ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        name = params.name
        if name in self._tools:
            direct = self._tools[name]
        else:
            direct = await self._resolve(name)
        if direct is None:
            return await self._fallback(ctx, params)
        result = await self._call(direct, name, params.arguments or {})
        return _call_tool_result(result.to_mcp_result())

    async def _resolve(self, name: str) -> _Direct | None:
        """The tool FastMCP would run for ``name``, if this path can run it exactly as FastMCP does."""
        tool = await self._mcp.get_tool(name)
        if tool is None:
            return None  # not remembered: unknown names are the caller's to choose
        direct = None
        if (type(tool) is FunctionTool and tool.timeout is None and tool.output_schema is not None
                and is_object_schema(tool.output_schema)):
            # The callable and validator FunctionTool.run builds on every call, built once.
            body = _wrap_body_errors(tool.fn, materialize_generators=True)
            wrapper = without_injected_parameters(body, run_in_thread=tool.run_in_thread)
            if wrapper is body and inspect.iscoroutinefunction(tool.fn):  # no injected parameters, nothing per call
                adapter = get_cached_typeadapter(_wrap_body_errors(wrapper))
                direct = _Direct(tool, adapter, list(tool.parameters.get("properties", {})))
        self._tools[name] = direct
        return direct

    async def _call(self, direct: _Direct, name: str, arguments: dict[str, Any]) -> ToolResult:
        """What ``ErrorMappingMiddleware`` around ``AliasMiddleware`` around the tool answers."""
        try:
            renames = self._aliases.get(name)
            if not uses_alias(arguments, renames):
                return await self._run(direct, name, arguments)
            assert renames is not None
            arguments, sent_as = rename_aliases(name, arguments, renames)
            try:
                return await self._run(direct, name, arguments)
            except ValidationError as exc:  # reported under the name the caller sent
                raise mcp_error_for(exc, name, renamed=sent_as) from exc
        except MCPError:
            raise
        except Exception as exc:
            error = mcp_error_for(exc, name, direct.params)
            if error.error.code == INTERNAL_ERROR:  # our fault: one line, traceback at DEBUG
                log.error("tool %s failed: %s", name, error.error.message, exc_info=exc)
            raise error from exc

    async def _run(self, direct: _Direct, name: str, arguments: dict[str, Any]) -> ToolResult:
        """The tool run and the failures FastMCP's ``call_tool`` reports, as it reports them."""
        tool = direct.tool
        try:
            raw = await tool._run_body(direct.adapter, True, arguments, strict=_strict(self._mcp))
        except ValidationError as exc:
            cause = exc.__cause__
            if isinstance(cause, PydanticValidationError):
                fastmcp_log.warning("Invalid arguments for tool %r: %s", name, _validation_error_summary(cause))
            else:
                fastmcp_log.warning("Invalid arguments for tool %r", name)
            raise
        except FastMCPError as exc:
            fastmcp_log.log(exc.log_level, f"Error calling tool {name!r}", exc_info=False)
            raise
        except PydanticValidationError as exc:
            fastmcp_log.warning("Invalid arguments for tool %r: %s", name, _validation_error_summary(exc))
            raise
        except Exception as exc:
            if isinstance(exc, MCPError) and exc.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            fastmcp_log.error(f"Error calling tool {name!r}", exc_info=get_http_status_code(exc) is None)
            raise ToolError(f"Error calling tool {name!r}: {exc}") from exc
        return tool._mark_non_object_result(tool.convert_result(raw))


def _strict(mcp: FastMCP) -> bool | None:
    """The ``strict`` FastMCP's tool run passes to pydantic on this server."""
    return True if mcp.strict_input_validation else None


def _call_tool_result(shape: Any) -> mcp_types.CallToolResult:
    """``ToolResult.to_mcp_result()``'s three shapes as the ``CallToolResult`` FastMCP sends."""
    if isinstance(shape, mcp_types.CallToolResult):
        return shape
    if isinstance(shape, tuple):
        content, structured = shape
        return mcp_types.CallToolResult(content=content, structured_content=structured)
    return mcp_types.CallToolResult(content=shape)


def install(mcp: FastMCP, aliases: AliasMiddleware) -> None:
    """Serve ``tools/call`` on ``mcp`` through ``DirectToolCalls`` (after its tools are registered)."""
    server = mcp._mcp_server  # the SDK low-level server; it has no public way to wrap a handler
    entry = server.get_request_handler(TOOLS_CALL)
    if entry is None:
        raise RuntimeError("FastMCP registered no tools/call handler")
    server.add_request_handler(TOOLS_CALL, entry.params_type, DirectToolCalls(mcp, aliases, entry.handler))

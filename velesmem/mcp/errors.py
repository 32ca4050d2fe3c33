"""The one place that maps velesmem errors onto JSON-RPC (the contract's "Error model").

    InvalidInput, NotFound          → -32602 INVALID_PARAMS
    a tool argument failing the wire types (pydantic)  → -32602, naming each bad field
    an unknown tool                 → -32602
    Internal, any other exception   → -32603 INTERNAL_ERROR

FastMCP turns a failing tool into an ``isError`` tool result; the contract wants a real JSON-RPC
error, which is what raising the SDK's ``MCPError`` from a middleware produces. ``error.data``
carries ``{"category": …}`` and, for wire validation failures, ``"fields"`` (the bad paths).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp import MCPError
from pydantic import ValidationError as PydanticValidationError

from velesmem.errors import Category, VelesmemError

log = logging.getLogger("velesmem.mcp")
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

CODES: dict[Category, int] = {
    Category.INVALID_INPUT: INVALID_PARAMS,
    Category.NOT_FOUND: INVALID_PARAMS,
    Category.INTERNAL: INTERNAL_ERROR,
}

_MAX_SHOWN = 80


def mcp_error_for(
    exc: BaseException, tool: str = "", params: list[str] | None = None, renamed: dict[str, str] | None = None
) -> MCPError:
    """The JSON-RPC error a failed ``tools/call`` answers with.

    ``renamed`` maps a canonical parameter back to the deprecated alias the caller actually sent,
    so a bad ``limit`` is reported as ``limit``, not as ``k``.
    """
    if isinstance(exc, MCPError):
        return exc
    cause = exc.__cause__ if isinstance(exc, (ToolError, ValidationError)) else None
    if isinstance(exc, VelesmemError) or isinstance(cause, VelesmemError):
        err = exc if isinstance(exc, VelesmemError) else cause
        assert isinstance(err, VelesmemError)
        return MCPError(CODES[err.category], err.message, {"category": err.category.value})
    if isinstance(cause, PydanticValidationError):
        return _validation_error(cause, tool, params or [], renamed or {})
    if isinstance(exc, NotFoundError):
        return MCPError(INVALID_PARAMS, f"{exc}; call tools/list for the tools this server offers",
                        {"category": Category.NOT_FOUND.value})
    inner = cause or exc
    where = f" in tool {tool!r}" if tool else ""
    return MCPError(INTERNAL_ERROR, f"internal error{where}: {type(inner).__name__}: {inner}",
                    {"category": Category.INTERNAL.value})


def _validation_error(
    err: PydanticValidationError, tool: str, params: list[str], renamed: dict[str, str]
) -> MCPError:
    problems: list[str] = []
    fields: list[str] = []
    for detail in err.errors(include_url=False, include_context=False):
        loc = detail["loc"]
        if loc and loc[0] in renamed:
            loc = (renamed[loc[0]], *loc[1:])
        path = _path(loc)
        fields.append(path)
        problems.append(f"{path}: {_describe(detail, params if len(loc) == 1 else None)}")
    message = f"invalid arguments for {tool or 'tool'}: " + "; ".join(problems)
    return MCPError(INVALID_PARAMS, message,
                    {"category": Category.INVALID_INPUT.value, "fields": fields})


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "arguments"


def _describe(detail: Any, params: list[str] | None) -> str:
    kind = detail["type"]
    if kind in ("missing", "missing_argument", "missing_keyword_only_argument"):
        return "required"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        known = f" (this tool takes: {', '.join(params)})" if params else ""
        return f"unknown parameter{known}"
    message = str(detail["msg"]).removeprefix("Value error, ")
    if kind == "value_error":
        return message
    return f"{message}, got {_show(detail.get('input'))}"


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


class ErrorMappingMiddleware(Middleware):
    """Turn every failed ``tools/call`` into the contract's JSON-RPC error (install outermost)."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        try:
            return await call_next(context)
        except MCPError:
            raise
        except Exception as exc:
            name = context.message.name
            error = mcp_error_for(exc, name, await _params_of(context, name))
            if error.error.code == INTERNAL_ERROR:  # our fault: one line, traceback at DEBUG
                log.error("tool %s failed: %s", name, error.error.message, exc_info=exc)
            raise error from exc


async def _params_of(context: MiddlewareContext[Any], name: str) -> list[str]:
    ctx = context.fastmcp_context
    if ctx is None:
        return []
    try:
        tool = await ctx.fastmcp.get_tool(name)
    except Exception:  # only used to enrich a message
        return []
    return list(tool.parameters.get("properties", {})) if tool is not None else []


class _ExpectedToolErrors(logging.Filter):
    """Drop FastMCP's own record of a failing tool (a multi-line traceback).

    A bad id or an oversized fact is an answer to the caller, not a server fault, and is not
    logged at all; an internal error is logged once, in one line with the tool's name, by
    ``ErrorMappingMiddleware`` (its traceback only at DEBUG).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.getMessage().startswith("Error calling tool"))


_FILTER = _ExpectedToolErrors()


def quiet_expected_tool_errors() -> None:
    """Install the log filter once on FastMCP's server logger (idempotent)."""
    logger = logging.getLogger("fastmcp.server.server")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)

"""The one place that maps velesmem errors onto JSON-RPC (the contract's "Error model").

    InvalidInput, NotFound          → -32602 INVALID_PARAMS
    a tool argument failing the wire types (pydantic)  → -32602, naming each bad field
    an unknown tool                 → -32602
    Internal, any other exception   → -32603 INTERNAL_ERROR

The contract wants a real JSON-RPC error, not an ``isError`` tool result: the ``tools/call``
handler (``velesmem.mcp.dispatch``) raises the SDK's ``MCPError`` built here. ``error.data``
carries ``{"category": …}`` and, for wire validation failures, ``"fields"`` (the bad paths).
"""

from __future__ import annotations

import json
import logging
from typing import Any

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

    A pydantic ``ValidationError`` here is the arguments failing the tool's validator (the
    handler maps one raised inside a tool's body as internal). ``renamed`` maps a canonical
    parameter back to the deprecated alias the caller actually sent, so a bad ``limit`` is
    reported as ``limit``, not as ``k``.
    """
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, VelesmemError):
        return MCPError(CODES[exc.category], exc.message, {"category": exc.category.value})
    if isinstance(exc, PydanticValidationError):
        return _validation_error(exc, tool, params or [], renamed or {})
    return internal_error(exc, tool)


def internal_error(exc: BaseException, tool: str = "") -> MCPError:
    """-32603 naming the tool and the exception (our fault, never the caller's)."""
    where = f" in tool {tool!r}" if tool else ""
    return MCPError(INTERNAL_ERROR, f"internal error{where}: {type(exc).__name__}: {exc}",
                    {"category": Category.INTERNAL.value})


def unknown_tool(name: str) -> MCPError:
    """-32602 for a name the server does not offer."""
    return MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}; call tools/list for the tools this server offers",
                    {"category": Category.NOT_FOUND.value})


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

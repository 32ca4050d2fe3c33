"""Deprecated argument spellings, accepted on the wire but absent from every schema.

The contract keeps ``limit`` as a deprecated alias of ``k`` for recall, recall_where and
recall_fused. A tool module declares such an alias with :func:`deprecated_alias`; the middleware
(and the direct ``tools/call`` path, ``velesmem.mcp.dispatch``) renames it before validation, and
refuses a call that sends both spellings.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

from velesmem.errors import InvalidInput
from velesmem.mcp.errors import mcp_error_for


def rename_aliases(
    tool: str, arguments: dict[str, Any], renames: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """``arguments`` with every alias in ``renames`` under its canonical name, and which canonical
    names the caller sent as an alias (canonical → alias). Raises InvalidInput if both were sent."""
    arguments = dict(arguments)
    sent_as: dict[str, str] = {}
    for alias, canonical in renames.items():
        if alias not in arguments:
            continue
        if canonical in arguments:
            raise InvalidInput(
                f"{tool}: send {canonical!r} only; {alias!r} is its "
                f"deprecated alias and both were given"
            )
        arguments[canonical] = arguments.pop(alias)
        sent_as[canonical] = alias
    return arguments, sent_as


def uses_alias(arguments: dict[str, Any] | None, renames: dict[str, str] | None) -> bool:
    """True if the call sent any deprecated spelling (the only case that needs renaming)."""
    return bool(renames and arguments and any(alias in arguments for alias in renames))


class AliasMiddleware(Middleware):
    """Rename deprecated argument names to their canonical name before the tool validates them."""

    def __init__(self) -> None:
        self.aliases: dict[str, dict[str, str]] = {}  # tool -> {alias: canonical}

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        renames = self.aliases.get(context.message.name)
        arguments = context.message.arguments
        if not uses_alias(arguments, renames):
            return await call_next(context)
        assert renames is not None and arguments is not None
        arguments, sent_as = rename_aliases(context.message.name, arguments, renames)
        message = context.message.model_copy(update={"arguments": arguments})
        try:
            return await call_next(context.copy(message=message))
        except ValidationError as exc:  # report the bad value under the name the caller sent
            raise mcp_error_for(exc, context.message.name, renamed=sent_as) from exc


def deprecated_alias(mcp: FastMCP, tool: str, alias: str, canonical: str) -> None:
    """Accept ``alias`` as a hidden, deprecated spelling of ``tool``'s ``canonical`` parameter."""
    for middleware in mcp.middleware:
        if isinstance(middleware, AliasMiddleware):
            middleware.aliases.setdefault(tool, {})[alias] = canonical
            return
    raise RuntimeError("deprecated_alias needs a server made by velesmem.mcp.server.build_server")

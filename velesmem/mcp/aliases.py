"""Deprecated argument spellings, accepted on the wire but absent from every schema.

The contract keeps ``limit`` as a deprecated alias of ``k`` for recall, recall_where and
recall_fused. A tool module declares such an alias with :func:`deprecated_alias`; the middleware
renames it before validation, and refuses a call that sends both spellings.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

from velesmem.errors import InvalidInput


class AliasMiddleware(Middleware):
    """Rename deprecated argument names to their canonical name before the tool validates them."""

    def __init__(self) -> None:
        self.aliases: dict[str, dict[str, str]] = {}  # tool -> {alias: canonical}

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        renames = self.aliases.get(context.message.name)
        arguments = context.message.arguments
        if renames and arguments and any(alias in arguments for alias in renames):
            arguments = dict(arguments)
            for alias, canonical in renames.items():
                if alias not in arguments:
                    continue
                if canonical in arguments:
                    raise InvalidInput(
                        f"{context.message.name}: send {canonical!r} only; {alias!r} is its "
                        f"deprecated alias and both were given"
                    )
                arguments[canonical] = arguments.pop(alias)
            message = context.message.model_copy(update={"arguments": arguments})
            context = context.copy(message=message)
        return await call_next(context)


def deprecated_alias(mcp: FastMCP, tool: str, alias: str, canonical: str) -> None:
    """Accept ``alias`` as a hidden, deprecated spelling of ``tool``'s ``canonical`` parameter."""
    for middleware in mcp.middleware:
        if isinstance(middleware, AliasMiddleware):
            middleware.aliases.setdefault(tool, {})[alias] = canonical
            return
    raise RuntimeError("deprecated_alias needs a server made by velesmem.mcp.server.build_server")

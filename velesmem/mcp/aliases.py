"""Deprecated argument spellings, accepted on the wire but absent from every schema.

The contract keeps ``limit`` as a deprecated alias of ``k`` for recall, recall_where and
recall_fused. A tool module declares such an alias with :func:`deprecated_alias`; the
``tools/call`` handler (``velesmem.mcp.dispatch``) renames it before validation, and refuses a
call that sends both spellings.
"""

from __future__ import annotations

from typing import Any

from velesmem.errors import InvalidInput
from velesmem.mcp.registry import ToolRegistry


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


def deprecated_alias(tools: ToolRegistry, tool: str, alias: str, canonical: str) -> None:
    """Accept ``alias`` as a hidden, deprecated spelling of ``tool``'s ``canonical`` parameter."""
    tools.deprecated_alias(tool, alias, canonical)

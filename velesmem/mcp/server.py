"""Build the FastMCP server: wire-level middleware first, then every discovered tool module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

from fastmcp import FastMCP

from velesmem import __version__
from velesmem.mcp import tools as tools_package
from velesmem.mcp.aliases import AliasMiddleware
from velesmem.mcp import dispatch
from velesmem.mcp.app import AppContext
from velesmem.mcp.errors import ErrorMappingMiddleware, quiet_expected_tool_errors

SERVER_NAME = "velesdb-memory"

INSTRUCTIONS = (
    "Durable, explainable local memory. remember facts (with metadata and typed links), recall "
    "them by meaning, and ask why to get the connected evidence subgraph. Ids are u64 and exceed "
    "2^53: relay the *_str decimal-string twins, never a rounded number."
)


DEFAULT_ORDER = 100

# FastMCP registers handlers for prompts and resources on every server, and the SDK advertises a
# capability for each registered handler. velesmem serves tools only, so it drops them: the
# initialize result then advertises only what is served, and these methods answer "method not found".
UNSERVED_METHODS = (
    "prompts/list", "prompts/get",
    "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe",
)


class _Server(FastMCP):
    """FastMCP whose ``@mcp.tool(...)`` passes a tool's docstring as its description. Our tool
    docstrings are the plain descriptions; left on the function, FastMCP would load griffe to look
    for Args/Returns sections in them (~30 ms of the daemon's start-up, before its first answer)."""

    def tool(self, name_or_fn: Any = None, **options: Any) -> Any:  # FastMCP.tool's signature
        if name_or_fn is not None or "description" in options:
            return super().tool(name_or_fn, **options)

        def register(fn: Callable[..., Any]) -> Any:
            description = inspect.getdoc(fn)
            fn.__doc__ = None
            return super(_Server, self).tool(description=description, **options)(fn)

        return register


def tool_modules() -> list[ModuleType]:
    """Every module of ``velesmem.mcp.tools`` that defines ``register``.

    Sorted by the module's optional ``ORDER`` (default 100), then name: that is the order of
    ``tools/list`` and of the generated docs (the memory tools first, as in the contract).
    """
    modules = []
    for info in pkgutil.iter_modules(tools_package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{tools_package.__name__}.{info.name}")
        if callable(getattr(module, "register", None)):
            modules.append(module)
    return sorted(modules, key=lambda m: (getattr(m, "ORDER", DEFAULT_ORDER), m.__name__))


def build_server(app: AppContext) -> FastMCP:
    """The one FastMCP server that stdio and HTTPS both serve, bound to ``app``'s services."""
    mcp = _Server(
        name=SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=__version__,
        strict_input_validation=True,  # the wire types in velesmem.mcp.wire carry all leniency
        mask_error_details=False,
        on_duplicate="error",
    )
    aliases = AliasMiddleware()
    mcp.add_middleware(ErrorMappingMiddleware())  # outermost: sees every failure, alias ones too
    mcp.add_middleware(aliases)
    quiet_expected_tool_errors()
    for module in tool_modules():
        module.register(mcp, app)
    _serve_only_tools(mcp)
    # tools/call skips FastMCP's per-call machinery; the middlewares above serve what it hands back.
    dispatch.install(mcp, aliases)
    return mcp


def _serve_only_tools(mcp: FastMCP) -> None:
    """Unregister the prompt and resource handlers (see ``UNSERVED_METHODS``)."""
    handlers = mcp._mcp_server._request_handlers  # the SDK has no public remove
    for method in UNSERVED_METHODS:
        handlers.pop(method, None)

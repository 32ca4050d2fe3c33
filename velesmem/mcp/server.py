"""Build the MCP server: the SDK's low-level ``Server`` serving every discovered tool module.

Only the SDK's public server API is used: the ``Server`` constructor's ``on_list_tools`` /
``on_call_tool`` handlers, ``add_request_handler``, ``streamable_http_app`` for HTTPS and
``run`` over the SDK's stdio transport. The server offers tools only (no prompts or resources):
the initialize result advertises only what is served, and other methods answer "method not found".
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any

import anyio
import mcp_types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from velesmem import __version__
from velesmem.mcp import tools as tools_package
from velesmem.mcp.app import AppContext
from velesmem.mcp.dispatch import ToolHandlers
from velesmem.mcp.registry import ToolRegistry

SERVER_NAME = "velesdb-memory"

INSTRUCTIONS = (
    "Durable, explainable local memory. remember facts (with metadata and typed links), recall "
    "them by meaning, and ask why to get the connected evidence subgraph. Ids are u64 and exceed "
    "2^53: relay the *_str decimal-string twins, never a rounded number."
)

DEFAULT_ORDER = 100
LOGGING_SET_LEVEL = "logging/setLevel"

McpServer = Server[Any]


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


def build_tools(app: AppContext, *, shipped: bool = True) -> ToolRegistry:
    """Every tool of every discovered module, bound to ``app``'s services (``shipped``: take the
    shipped definitions where they still fit, see ``velesmem.mcp.registry``)."""
    tools = ToolRegistry(shipped=shipped)
    for module in tool_modules():
        module.register(tools, app)
    return tools


async def _set_logging_level(_ctx: ServerRequestContext[Any],
                             _params: mcp_types.SetLevelRequestParams) -> mcp_types.EmptyResult:
    """Accepted and ignored: the daemon's log level is its own setting (kept for clients that ask)."""
    return mcp_types.EmptyResult()


def build_server(app: AppContext) -> McpServer:
    """The one MCP server that stdio and HTTPS both serve, bound to ``app``'s services."""
    return server_for(build_tools(app))


def server_for(tools: ToolRegistry) -> McpServer:
    """An MCP server offering exactly ``tools`` (their definitions are fixed from here on)."""
    handlers = ToolHandlers(tools)
    server: McpServer = Server(
        SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
        # The schema the SDK checks Mcp-Param-* headers against, read from the registry: without
        # it the SDK would run the whole tools/list handler path on every call with arguments.
        get_tool_input_schema=tools.input_schema,
        on_list_tools=handlers.list_tools, on_call_tool=handlers.call_tool)
    server.add_request_handler(LOGGING_SET_LEVEL, mcp_types.SetLevelRequestParams, _set_logging_level)
    return server


def http_app(server: McpServer, *, path: str, session_idle_timeout: float | None,
             json_response: bool = False) -> Starlette:
    """The streamable-HTTP ASGI app serving ``server`` at ``path`` (its lifespan runs the SDK
    session manager). Host/Origin checks are the daemon's own guards, so the SDK's are off."""
    return server.streamable_http_app(
        streamable_http_path=path, json_response=json_response,
        session_idle_timeout=session_idle_timeout,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))


def serve_stdio(server: McpServer) -> None:
    """Serve one client on stdin/stdout until stdin closes."""

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)

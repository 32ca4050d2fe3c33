"""The second floor ``remember_cpu.py`` compares the daemon with: a bare MCP server with one trivial
tool on the MCP SDK's public lowlevel ``Server`` (``on_list_tools`` / ``on_call_tool`` handlers and
``Server.streamable_http_app``), no FastMCP.

Same transport as the daemon and as ``_bare_fastmcp.py``: streamable HTTP on ``/mcp`` over TLS with a
leaf signed by a CA made by velesmem's own TLS code, uvicorn with h11 on asyncio unless
``--loop``/``--http`` name another of uvicorn's stacks, JSON responses when the daemon's
``HTTP_APP_OPTIONS`` ask for them. Nothing else: no guards, no middleware, no store. The tool is
called ``remember`` and answers ``{id, id_str}`` like the real one, storing nothing.

Run by ``remember_cpu.py``: python3 bench/_bare_sdk.py PORT CERT KEY [--loop asyncio|uvloop]
[--http h11|httptools]
"""

from __future__ import annotations

import argparse
import json
import socket
import zlib
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

MCP_PATH = "/mcp"
TOOL = types.Tool(name="remember", description="Answer an id derived from the text; store nothing.",
                  input_schema={"type": "object", "properties": {"fact": {"type": "string"}},
                                "required": ["fact"]})


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    """The one tool."""
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """``remember``: an id from the text's CRC, as structured content plus its JSON text."""
    fact = (params.arguments or {}).get("fact")
    if params.name != "remember" or not isinstance(fact, str):
        return types.CallToolResult(content=[types.TextContent(text="bad call")], is_error=True)
    ident = zlib.crc32(fact.encode())
    result = {"id": ident, "id_str": str(ident)}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(result))],
                                structured_content=result)


def build() -> Any:
    """The Starlette app of a lowlevel ``Server`` serving the one tool."""
    from _common import RESULTS_DIR  # noqa: F401 — puts this checkout first on sys.path
    try:
        from velesmem.daemon.app import HTTP_APP_OPTIONS
    except ImportError:
        HTTP_APP_OPTIONS = {}
    server: Server[Any] = Server("bare-sdk", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(streamable_http_path=MCP_PATH,
                                      json_response=bool(HTTP_APP_OPTIONS.get("json_response", False)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--loop", default="asyncio")
    parser.add_argument("--http", default="h11")
    args = parser.parse_args()
    # Bound like the daemon binds (proto TCP, so asyncio sets TCP_NODELAY on accepted sockets).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    config = uvicorn.Config(build(), ssl_certfile=args.cert, ssl_keyfile=args.key, log_level="warning",
                            access_log=False, http=args.http, loop=args.loop)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()

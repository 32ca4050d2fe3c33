"""The floor ``http_load.py`` compares the daemon with: a bare FastMCP server with one trivial tool.

Same framework versions, same transport as the daemon (streamable HTTP on ``/mcp`` over TLS with a
leaf signed by the daemon's CA, uvicorn with h11 on asyncio unless ``--loop``/``--http`` name
another of uvicorn's stacks, and the daemon's own ``http_app`` options,
``velesmem.daemon.app.HTTP_APP_OPTIONS``; ``--defaults`` takes FastMCP's defaults instead), and
nothing else: no guards, no middleware, no store. The tool is called ``remember``
so the same client loop drives both servers; it answers ``{id, id_str}`` like the real one and
stores nothing.

Run by ``http_load.py``: python3 bench/_bare_fastmcp.py PORT CERT KEY [--defaults] [--loop asyncio|uvloop]
[--http h11|httptools]
"""

from __future__ import annotations

import argparse
import socket
import zlib
from typing import Any

import uvicorn
from fastmcp import FastMCP

MCP_PATH = "/mcp"


def build(defaults: bool = False) -> Any:
    from _common import RESULTS_DIR  # noqa: F401 — puts this checkout first on sys.path
    try:
        from velesmem.daemon.app import HTTP_APP_OPTIONS
    except ImportError:  # a checkout from before the option existed: FastMCP's defaults
        HTTP_APP_OPTIONS = {}

    mcp = FastMCP(name="bare")

    @mcp.tool
    async def remember(fact: str) -> dict[str, Any]:
        """Answer an id derived from the text; store nothing."""
        ident = zlib.crc32(fact.encode())
        return {"id": ident, "id_str": str(ident)}

    return mcp.http_app(path=MCP_PATH, **({} if defaults else HTTP_APP_OPTIONS))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--defaults", action="store_true")
    parser.add_argument("--loop", default="asyncio")
    parser.add_argument("--http", default="h11")
    args = parser.parse_args()
    # Bound like the daemon binds (proto TCP, so asyncio sets TCP_NODELAY on accepted sockets).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    config = uvicorn.Config(build(args.defaults), ssl_certfile=args.cert, ssl_keyfile=args.key, log_level="warning",
                            access_log=False, http=args.http, loop=args.loop)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()

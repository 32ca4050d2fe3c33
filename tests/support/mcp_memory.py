"""A FastMCP ``Client`` transport to an in-process SDK ``Server`` over memory streams.

``fastmcp.Client(in_memory(build_server(app)))`` opens a real MCP session (initialize, then
JSON-RPC over anyio memory streams) with velesmem's server, no subprocess and no port.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastmcp.client.transports import ClientTransport
from mcp import ClientSession
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams


class InMemoryTransport(ClientTransport):
    """Serve one client session from ``server`` in the same event loop."""

    def __init__(self, server: Server[Any]) -> None:
        self.server = server

    @contextlib.asynccontextmanager
    async def connect_session(self, **session_kwargs: Any) -> AsyncIterator[ClientSession]:
        session_kwargs.pop("transport_options", None)
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            client_read, client_write = client_streams
            server_read, server_write = server_streams
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: self.server.run(
                    server_read, server_write, self.server.create_initialization_options()))
                try:
                    async with ClientSession(read_stream=client_read, write_stream=client_write,
                                             **session_kwargs) as session:
                        yield session
                finally:
                    tg.cancel_scope.cancel()


def in_memory(server: Server[Any]) -> InMemoryTransport:
    return InMemoryTransport(server)

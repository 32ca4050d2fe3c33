"""A separate MCP client process that keeps the daemon busy: ``python burst_client.py URL CA``.

Run apart from the test so its own work never delays the test's /health probes."""

from __future__ import annotations

import asyncio
import sys

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from velesmem.daemon.tls import client_ssl_context


async def burst(url: str, ca: str) -> None:
    async with Client(StreamableHttpTransport(url, verify=client_ssl_context(ca))) as client:
        calls = [client.call_tool("recall_fused", {"query": f"drawer {i} token", "k": 10, "hops": 10, "pool": 1000})
                 for i in range(48)]
        calls += [client.call_tool("remember", {"fact": f"burst fact {i} while health is probed"}) for i in range(32)]
        print("burst started", flush=True)
        for result in await asyncio.gather(*calls):
            assert not result.is_error, result


if __name__ == "__main__":
    asyncio.run(burst(sys.argv[1], sys.argv[2]))

"""``--http-port 0``: the daemon binds a free port the system picks, says which on its
"listening on" line and in ``/health``, and serves MCP there (tests use it so none races another
for a port)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import Daemon, start_on_port_zero, structured

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def test_port_zero_binds_a_free_port_announced_in_the_log_and_in_health(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    configured = daemon.port
    start_on_port_zero(daemon)
    assert daemon.port not in (0, configured)
    assert f"listening on https://127.0.0.1:{daemon.port}/mcp" in daemon.output()
    async with httpx.AsyncClient(verify=daemon.ssl_context(), timeout=10) as http:
        health = (await http.get(f"{daemon.base}/health")).json()
    assert health["port"] == daemon.port
    async with daemon.client() as client:  # the Host check admits the port it got
        saved = structured(await client.call_tool("remember", {"fact": "served on an ephemeral port"}))
    assert saved["id_str"]
    assert daemon.stop() == 0

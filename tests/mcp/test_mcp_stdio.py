"""The real stdio transport: ``python3 -m velesmem`` as a subprocess, driven by the MCP SDK client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp_helpers import HIGH_FACT, INVALID_PARAMS


pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_stdio_server_speaks_the_contract(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env.update(HOME=str(tmp_path / "home"), VELESDB_MEMORY_PATH=str(tmp_path / "store"))
    (tmp_path / "home").mkdir()
    params = StdioServerParameters(command=sys.executable, args=["-m", "velesmem"], env=env, cwd=str(tmp_path))
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {tool.name for tool in (await session.list_tools()).tools}
                assert {"remember", "recall", "why", "memory_status"} <= names

                stored = await session.call_tool("remember", {"fact": HIGH_FACT, "metadata": '{"p": 1}'})
                id_str = stored.structured_content["id_str"]
                assert int(id_str) > 2**63

                recalled = await session.call_tool("recall", {"query": HIGH_FACT, "limit": "1"})
                assert [m["id_str"] for m in recalled.structured_content["memories"]] == [id_str]

                with pytest.raises(MCPError) as bad:
                    await session.call_tool("recall", {"query": "x", "k": "abc"})
                assert bad.value.error.code == INVALID_PARAMS
                assert "k" in bad.value.error.data["fields"]

                gone = await session.call_tool("forget", {"id": id_str})
                assert gone.structured_content == {"id": int(id_str), "id_str": id_str, "found": True}

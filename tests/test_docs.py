"""The README cannot fall behind the code: every command, setting and tool is documented there."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from velesmem.cli import build_parser
from velesmem.config import SETTINGS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def test_every_subcommand_is_in_the_readme() -> None:
    commands = _subcommands()
    assert commands, "no subcommand discovered"
    missing = [c for c in commands if f"velesdb-memory {c}" not in README]
    assert not missing, f"README.md 'Commands' lacks: {missing}"


def test_every_setting_is_in_the_readme() -> None:
    missing = [s.env_name for s in SETTINGS if f"`{s.env_name}`" not in README]
    assert not missing, f"README.md 'Settings' lacks: {missing}"


def test_every_served_tool_is_in_the_readme(tmp_path: Path) -> None:
    from fastmcp import Client

    import velesmem
    from velesmem.config import Settings
    from velesmem.mcp.app import AppContext
    from velesmem.mcp.server import build_server
    from tests.support.mcp_memory import in_memory

    async def tool_names() -> list[str]:
        with velesmem.open(tmp_path, settings=Settings(path=tmp_path)) as runtime:
            async with Client(in_memory(build_server(AppContext(runtime)))) as client:
                return [t.name for t in await client.list_tools()]

    names = asyncio.run(tool_names())
    assert len(names) == 27
    missing = [n for n in names if f"`{n}`" not in README]
    assert not missing, f"README.md 'Tools' lacks: {missing}"

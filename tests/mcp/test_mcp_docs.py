"""docs/tools.md and docs/tools.json are generated from the live server and must not drift."""

from __future__ import annotations

import json

from velesmem.mcp import docs


def test_committed_tool_docs_match_the_live_server() -> None:
    fresh = docs.generate()
    for name, text in fresh.items():
        path = docs.DOCS_DIR / name
        assert path.is_file(), f"{path} is missing: run `{docs.REGENERATE}`"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `{docs.REGENERATE}`"


def test_tool_docs_cover_every_advertised_tool_and_parameter() -> None:
    fresh = docs.generate()
    tools = json.loads(fresh[docs.JSON_NAME])["tools"]
    assert len(tools) >= 11
    markdown = fresh[docs.MD_NAME]
    for tool in tools:
        assert f"### {tool['name']}" in markdown
        for param in tool["inputSchema"].get("properties", {}):
            assert f"| `{param}` |" in markdown, (tool["name"], param)
    assert "limit" not in json.dumps([t for t in tools if t["name"] == "recall"])

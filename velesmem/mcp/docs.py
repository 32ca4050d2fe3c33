"""Generate ``docs/tools.md`` and ``docs/tools.json`` from a running server's ``tools/list``,
and the shipped tool definitions (``velesmem/mcp/definitions.json``) the server starts from.

    python3 -m velesmem.mcp.docs            # rewrite the three files
    python3 -m velesmem.mcp.docs --check    # exit 1 when the committed files drift

The server is built on a throwaway store with default settings, every definition built by FastMCP
(none taken from the shipped file), so the output depends only on the code.
``tests/mcp/test_mcp_docs.py`` fails when the committed files differ from what this writes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp import Client

from velesmem.mcp.registry import DEFINITIONS_FILE
from velesmem.mcp.server import McpServer
from velesmem.mcp.wire import ID_SCHEMA

REGENERATE = "python3 -m velesmem.mcp.docs"
DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
MD_NAME = "tools.md"
JSON_NAME = "tools.json"

_HINTS = (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"),
          ("idempotentHint", "idempotent"), ("openWorldHint", "open-world"))

_PREAMBLE = f"""\
# velesdb-memory MCP tools

Generated from the live server's `tools/list` by `{REGENERATE}` — do not edit by hand
(`tests/mcp/test_docs.py` fails when this file or `tools.json`, the raw schemas, drift).

## Wire rules

- Every input slot advertises exactly one JSON type. An `integer`, `number` or `boolean` slot also
  accepts a string holding the same scalar as JSON (`6` and `"6"`, `true` and `"true"`) and refuses
  anything else (`"abc"`, `"1.5"` for an integer, arrays, objects, booleans for numbers, numbers for
  booleans). An `object` or `array` slot also accepts its JSON-encoded string. A `string` slot is
  never re-parsed.
- Ids are u64 and exceed 2^53. Id inputs are advertised as decimal strings and accept a JSON number
  too; every id in a result comes with its decimal-string twin (`id_str`, `edge_id_str`,
  `from_str`/`to_str`). Relay the string form.
- `k` is the result count of `recall`, `recall_where` and `recall_fused`. `limit` is still accepted
  there as a deprecated alias (absent from the schemas); sending both is refused.
- Failures are JSON-RPC errors, not tool results: invalid input or an unknown id → `-32602`, an
  internal fault → `-32603`. `error.data.category` names the category (`InvalidInput`, `NotFound`,
  `Internal`); for a malformed argument `error.data.fields` lists the offending paths.
"""


async def live_tools(server: McpServer) -> list[dict[str, Any]]:
    """``tools/list`` of ``server`` over an in-memory MCP session, as wire JSON."""
    async with Client(server) as client:
        listing = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listing.tools]


def render_json(server_name: str, tools: list[dict[str, Any]]) -> str:
    """The raw schema dump: the server name and every listed tool, as the wire carries them."""
    return json.dumps({"server": server_name, "tools": tools}, indent=2, ensure_ascii=False) + "\n"


def render_markdown(tools: list[dict[str, Any]]) -> str:
    """The human reference: wire rules, an index, then one section per tool."""
    lines = [_PREAMBLE, "## Tools", "", "| tool | summary |", "| --- | --- |"]
    for tool in tools:
        lines.append(f"| [`{tool['name']}`](#{tool['name']}) | {_cell(_summary(tool))} |")
    for tool in tools:
        lines += ["", f"### {tool['name']}", "", tool.get("description", "").strip(), ""]
        hints = [label for key, label in _HINTS if tool.get("annotations", {}).get(key)]
        if hints:
            lines += [f"_Hints: {', '.join(hints)}._", ""]
        rows = list(_rows(tool.get("inputSchema", {})))
        if rows:
            lines += ["| parameter | type | required | default | notes |", "| --- | --- | --- | --- | --- |"]
            lines += [f"| `{n}` | {t} | {r} | {d} | {_cell(notes)} |" for n, t, r, d, notes in rows]
        else:
            lines.append("Takes no parameters.")
    return "\n".join(lines).rstrip() + "\n"


def _summary(tool: dict[str, Any]) -> str:
    text = str(tool.get("description", "")).strip()
    return text.split(". ")[0].rstrip(".") + "."


def _rows(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str, str, str, Any]]:
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        yield path, _type(prop), "yes" if name in required else "no", default, prop.get("description", "")
        if prop.get("type") == "object" and "properties" in prop:
            yield from _rows(prop, f"{path}.")
        items = prop.get("items", {})
        if prop.get("type") == "array" and "properties" in items:
            yield from _rows(items, f"{path}[].")


def _type(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if kind == "string" and prop.get("pattern") == ID_SCHEMA["pattern"]:
        return "id (decimal string; a number is accepted)"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    if kind == "array":
        return f"array of {_type(prop.get('items', {}))}"
    if kind is None:
        return "any JSON scalar"
    return str(kind)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def generate() -> dict[str, str]:
    """Build a server on a throwaway store and render both docs files: {file name: text}."""
    return generate_all()[0]


def generate_all() -> tuple[dict[str, str], str]:
    """The docs files ({file name: text}) and ``definitions.json``'s text, from one server whose
    definitions FastMCP built."""
    from velesmem.config import Settings
    from velesmem.mcp.app import AppContext
    from velesmem.mcp.server import SERVER_NAME, build_tools, server_for
    from velesmem.runtime import Runtime

    with tempfile.TemporaryDirectory(prefix="velesmem-docs-") as tmp:
        settings = Settings.from_env({}).with_overrides(path=Path(tmp) / "store")
        with Runtime.open(settings) as runtime:
            registry = build_tools(AppContext(runtime), shipped=False)
            tools = asyncio.run(live_tools(server_for(registry)))
    docs = {MD_NAME: render_markdown(tools), JSON_NAME: render_json(SERVER_NAME, tools)}
    return docs, registry.definitions_file()


def stale_files(docs_dir: Path = DOCS_DIR, definitions: Path = DEFINITIONS_FILE) -> list[Path]:
    """The generated files whose committed text differs from a fresh generation."""
    fresh, shipped = generate_all()
    files = {docs_dir / name: text for name, text in fresh.items()} | {definitions: shipped}
    return [path for path, text in files.items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) docs/tools.md and docs/tools.json."""
    parser = argparse.ArgumentParser(prog="python3 -m velesmem.mcp.docs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")
    parser.add_argument("--docs-dir", type=Path, default=DOCS_DIR, help=f"default: {DOCS_DIR}")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.docs_dir)
        for path in stale:
            print(f"{path} is stale: run `{REGENERATE}`", file=sys.stderr)
        return 1 if stale else 0
    args.docs_dir.mkdir(parents=True, exist_ok=True)
    fresh, shipped = generate_all()
    files = {args.docs_dir / name: text for name, text in fresh.items()} | {DEFINITIONS_FILE: shipped}
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

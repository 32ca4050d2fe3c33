"""The daemon layer uses uvicorn, Starlette and the MCP SDK through their public names only (a
routine upgrade must not stop HTTPS), and pins the libraries whose classes it subclasses."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAEMON = sorted((ROOT / "velesmem" / "daemon").glob("*.py"))
# Distribution → why it must stay on one minor version (a class of it is subclassed, or the daemon
# is built on its internals' behaviour).
PINNED = {"uvicorn": "connections.py and server.py subclass its HTTP protocols and Server",
          "mcp": "the SDK's session manager serves /mcp; the ledger ends sessions through it"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_daemon_imports_no_private_name_of_another_distribution() -> None:
    found = []
    for path in DAEMON:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] != "velesmem":
                parts = node.module.split(".") + [a.name for a in node.names]
                found += [f"{path.name}: from {node.module} import …{p}" for p in parts if _private(p)]
            elif isinstance(node, ast.Import):
                found += [f"{path.name}: import {a.name}" for a in node.names
                          if any(_private(p) for p in a.name.split("."))]
    assert not found, found


def test_the_daemon_reads_no_private_attribute_of_another_object() -> None:
    """``self._x`` is the daemon's own state; ``os._exit`` is public API."""
    found = []
    for path in DAEMON:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and _private(node.attr) and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "os")):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not found, found


def test_libraries_the_daemon_subclasses_are_pinned_to_one_minor_version() -> None:
    specs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    by_name = {re.split(r"[\[<>=!~ ;]", s, maxsplit=1)[0].lower(): s for s in specs}
    loose = []
    for name in PINNED:
        spec = by_name.get(name, "")
        low = re.search(r">=\s*(\d+)\.(\d+)", spec)
        high = re.search(r"<\s*(\d+)\.(\d+)", spec)
        if not (low and high and (int(high[1]), int(high[2])) == (int(low[1]), int(low[2]) + 1)):
            loose.append(f"{name}: {spec or 'not declared'} ({PINNED[name]})")
    assert not loose, loose

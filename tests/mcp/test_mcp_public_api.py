"""The MCP layer uses other libraries through their public API only, and every library
velesmem imports is declared in pyproject.toml (a routine upgrade must not stop the wire)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "velesmem"
MCP_LAYER = [*sorted((PACKAGE / "mcp").rglob("*.py")), PACKAGE / "daemon" / "stdio.py"]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _foreign(module: str | None, level: int) -> bool:
    return level == 0 and module is not None and module.split(".")[0] != "velesmem"


def test_the_mcp_layer_imports_no_private_name_of_another_distribution() -> None:
    found = []
    for path in MCP_LAYER:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _foreign(node.module, node.level):
                parts = node.module.split(".") + [a.name for a in node.names]  # type: ignore[union-attr]
                found += [f"{path.name}: from {node.module} import {p}" for p in parts if _private(p)]
            elif isinstance(node, ast.Import):
                found += [f"{path.name}: import {a.name}" for a in node.names
                          if any(_private(p) for p in a.name.split("."))]
    assert not found, found


def test_the_mcp_layer_reads_no_private_attribute_of_another_object() -> None:
    found = []
    for path in MCP_LAYER:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and _private(node.attr)
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "os"))):  # os._exit is public
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not found, found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    names = {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0] for spec in specs}
    return {name.lower().replace("_", "-") for name in names}


def test_every_library_velesmem_imports_is_declared_in_pyproject() -> None:
    providers = importlib.metadata.packages_distributions()
    declared = _declared() | {"psycopg-pool"}  # psycopg[pool]
    missing = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top == "velesmem" or top in sys.stdlib_module_names or top not in providers:
                    continue
                if not {d.lower().replace("_", "-") for d in providers[top]} & declared:
                    missing.add(f"{top} ({', '.join(providers[top])})")
    assert not missing, sorted(missing)


def test_the_mcp_sdk_and_the_libraries_we_subclass_are_pinned_to_one_minor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0]: spec for spec in project["dependencies"]}
    for name in ("mcp", "mcp-types", "fastmcp", "fastmcp-slim", "uvicorn"):
        assert re.search(r">=(\d+)\.(\d+)[^,]*,<\1\.\d+$", pins[name]), pins[name]

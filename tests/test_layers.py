"""The layering DESIGN.md draws: only ``velesmem/store/`` speaks SQL; the services import no
SQLite and run no statement; nothing below the MCP layer imports MCP or HTTP frameworks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "velesmem"
SERVICES = ("memory", "context", "extract", "migration")
SQL = re.compile(r"\b(SELECT\b.+\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                 r"CREATE\s+(TABLE|INDEX|VIRTUAL)|DROP\s+TABLE|PRAGMA\s+\w+)\b", re.I | re.S)
EXECUTE = {"execute", "executemany", "executescript"}
FRAMEWORKS = ("fastmcp", "mcp", "starlette", "uvicorn", "sqlite3", "psycopg")


def _modules(*parts: str) -> list[Path]:
    return [p for part in parts for p in sorted((PACKAGE / part).rglob("*.py"))
            if (PACKAGE / part).exists()]


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_services_import_no_database_or_protocol_framework() -> None:
    offenders = {}
    for path in _modules(*SERVICES):
        bad = _imports(ast.parse(path.read_text(encoding="utf-8"))) & set(FRAMEWORKS)
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = sorted(bad)
    assert offenders == {}


def test_services_execute_no_sql() -> None:
    offenders = []
    for path in _modules(*SERVICES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in EXECUTE:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and SQL.search(node.value):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: SQL text")
    assert offenders == []


def test_the_check_catches_sql_where_it_is() -> None:
    """The scan is not vacuous: the SQLite backend is full of what it looks for."""
    hits = 0
    for path in _modules("store/sqlite"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hits += sum(1 for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr in EXECUTE)
    assert hits > 50
    assert "sqlite3" in _imports(ast.parse((PACKAGE / "store/sqlite/backend.py").read_text()))

"""The layering DESIGN.md draws: only ``velesmem/store/`` speaks SQL; the services import no
SQLite and run no statement; nothing below the MCP layer imports MCP or HTTP frameworks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "velesmem"
SERVICES = ("memory", "context", "extract", "migration", "consolidate")
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


# The layer order DESIGN.md draws, lowest first: a module may import its own layer and those
# below it, never one above. Every top-level unit of the package is placed here: a new one must
# be placed too (the test says so).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("config", "limits", "ids", "errors", "validate", "installed", "spawner", "logtail",
     "arenas"),
    ("embed", "store", "extract"),
    ("memory", "context", "migration", "consolidate", "importers"),
    ("runtime",),
    ("mcp", "web"),
    ("daemon",),
    ("clients", "agents", "service"),
    ("cli", "launcher"),  # the launcher attaches or enters the CLI; old scripts enter the CLI
    ("__main__",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
FACADE = "__init__"  # velesmem/__init__.py re-exports lazily (velesmem.open): above everything


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _lazy_names() -> dict[str, str]:
    """``velesmem.<name>`` re-exported by the package root → the unit that defines it."""
    import velesmem

    return {name: module.split(".")[1] for name, module in velesmem._LAZY.items()}


def _imported_units(tree: ast.AST, lazy: dict[str, str]) -> list[tuple[int, str]]:
    """(line, unit) for every import of a velesmem module, wherever it sits (a function-level
    or TYPE_CHECKING import points the same way as a top-level one)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1]) for a in node.names
                      if a.name.startswith("velesmem.")]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if parts[0] != "velesmem":
                continue
            if len(parts) > 1:
                found.append((node.lineno, parts[1]))
                continue
            for alias in node.names:  # from velesmem import limits / Runtime / __version__
                if alias.name in RANK:
                    found.append((node.lineno, alias.name))
                elif alias.name in lazy:
                    found.append((node.lineno, lazy[alias.name]))
    return found


def upward_imports(source: str, unit: str, lazy: dict[str, str]) -> list[str]:
    """The imports in ``source`` (a module of ``unit``) that point up the layer order."""
    return [f"line {line}: {unit} -> {target}"
            for line, target in _imported_units(ast.parse(source), lazy)
            if target != unit and RANK.get(target, -1) > RANK[unit]]


def test_every_unit_of_the_package_has_a_place_in_the_layer_order() -> None:
    units = {_unit(p) for p in PACKAGE.rglob("*.py")} - {FACADE}
    assert sorted(units - set(RANK)) == []


def test_no_import_points_up_the_layer_order() -> None:
    lazy = _lazy_names()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(path)
        if unit == FACADE:
            continue
        offenders += [f"{path.relative_to(PACKAGE)} {hit}"
                      for hit in upward_imports(path.read_text(encoding="utf-8"), unit, lazy)]
    assert offenders == []


def test_the_layer_check_catches_an_upward_import() -> None:
    """Not vacuous: each form of import that pointed up once is caught."""
    lazy = _lazy_names()
    assert upward_imports("from velesmem.memory.validate import dumps\n", "store", lazy)
    assert upward_imports("def f():\n    from velesmem import Runtime\n", "memory", lazy)
    assert upward_imports("import velesmem.cli._serve\n", "service", lazy)
    assert upward_imports("from velesmem import limits, validate\n", "store", lazy) == []


# Only the Runtime starts threads: it hands its spawner to the store. The modules below run in
# processes that have no Runtime (each says why) and may create their own.
THREAD_FACTORIES = {"Thread", "Timer", "ThreadPoolExecutor"}
THREADS_ALLOWED = {
    "runtime.py": "the Runtime's ThreadSpawner and its executors",
    "daemon/relay.py": "the stdio relay: a light client of the daemon, no store, no Runtime",
    "daemon/stdio.py": "the orphan watchdog, also started by the relay (no Runtime there)",
    "cli/hook.py": "an agent hook's deadline timer: a short command, no Runtime",
    "clients/probe.py": "a client probe's deadline timer: a short command, no Runtime",
}


def thread_creations(source: str) -> list[int]:
    """Lines of ``source`` that construct a thread, timer or thread pool (a call of
    ``threading.Thread``, ``Thread``, ``ThreadPoolExecutor``, …, or a subclass of one)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets = [node.func] if isinstance(node, ast.Call) else \
            list(node.bases) if isinstance(node, ast.ClassDef) else []
        for target in targets:
            name = target.attr if isinstance(target, ast.Attribute) else \
                target.id if isinstance(target, ast.Name) else None
            if name in THREAD_FACTORIES:
                lines.append(node.lineno)
    return lines


def test_only_the_runtime_creates_threads() -> None:
    offenders = [f"{rel}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
                 if (rel := path.relative_to(PACKAGE).as_posix()) not in THREADS_ALLOWED
                 for line in thread_creations(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_thread_check_catches_each_way_to_make_a_thread() -> None:
    assert thread_creations("import threading\nthreading.Thread(target=f).start()\n") == [2]
    assert thread_creations("from threading import Timer\nTimer(1, f).start()\n") == [2]
    assert thread_creations("ThreadPoolExecutor(4)\n") == [1]
    assert thread_creations("class Worker(threading.Thread):\n    pass\n") == [1]
    assert thread_creations("spawner.thread('velesmem-writer', run)\n") == []


SERVICES_OF_THE_RUNTIME = {"memory", "context", "extraction", "migration", "autograph"}


def service_patches(source: str) -> list[str]:
    """``self.<service>.<attr> = …`` assignments in ``source``: the Runtime patching a service
    after building it, instead of giving it what it needs in its constructor."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) \
                    and isinstance(target.value.value, ast.Name) \
                    and target.value.value.id == "self" \
                    and target.value.attr in SERVICES_OF_THE_RUNTIME:
                found.append(f"line {node.lineno}: self.{target.value.attr}.{target.attr}")
    return found


def test_the_runtime_patches_no_service_after_building_it() -> None:
    assert service_patches((PACKAGE / "runtime.py").read_text(encoding="utf-8")) == []
    assert service_patches("self.memory.on_remembered = self.autograph.offer\n") == [
        "line 1: self.memory.on_remembered"]

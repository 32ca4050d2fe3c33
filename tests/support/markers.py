"""A static check of the ``integration`` marker: which tests start a process (read from the
source with ``ast``, following the module's own functions, the helpers of tests/ and the
fixtures of its conftest files) and which of them carry the marker."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

MARKER = "integration"

# ``module.attr`` calls that start a process.
PROCESS_CALLS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen", "execv", "execve",
           "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle"},
    "pty": {"fork", "spawn"},
    "multiprocessing": {"Process", "Pool", "get_context"},
    "concurrent.futures": {"ProcessPoolExecutor"},
}
# Names that start a process wherever they come from: the MCP SDK's and FastMCP's stdio clients.
PROCESS_NAMES = {"stdio_client", "StdioServerParameters", "StdioTransport", "PythonStdioTransport",
                 "NodeStdioTransport", "NpxStdioTransport", "UvxStdioTransport",
                 "ProcessPoolExecutor"}


@dataclass
class Spawner:
    """What starts a process: helper names (functions, classes) and fixture names."""

    names: set[str] = field(default_factory=lambda: set(PROCESS_NAMES))
    fixtures: set[str] = field(default_factory=set)


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name → ``module.attr`` for ``from m import a`` and ``module`` for ``import m``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _starts_directly(node: ast.AST, imports: dict[str, str], names: set[str]) -> bool:
    """``node`` mentions a process-starting call or name (a function's own parameters and
    local variables shadow module names: ``def count(findings)`` does not call ``findings``)."""
    local: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local = _params(node) | {sub.id for sub in ast.walk(node)
                                 if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            if sub.id in local:
                continue
            if sub.id in names:
                return True
            target = imports.get(sub.id, "")
            module, _, attr = target.rpartition(".")
            if attr in PROCESS_CALLS.get(module, ()) or attr in names:
                return True
        elif isinstance(sub, ast.Attribute):
            dotted = _dotted(sub)
            if dotted is None:
                if sub.attr in names and sub.attr[:1].isupper():
                    return True
                continue
            head, _, attr = dotted.rpartition(".")
            first = head.split(".")[0]
            module = imports.get(first, first) + head[len(first):]
            if attr in PROCESS_NAMES or attr in PROCESS_CALLS.get(module, ()):
                return True
    return False


def _fixture_name(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (_dotted(target) or "").endswith("fixture"):
            if isinstance(deco, ast.Call):
                for kw in deco.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        return str(kw.value.value)
            return node.name
    return None


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = node.args
    return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}


def _spawning(tree: ast.Module, spawner: Spawner) -> tuple[set[str], set[str]]:
    """Module-level functions/classes and fixtures of ``tree`` that start a process, followed
    through the module's own calls to a fixed point."""
    imports = _imports(tree)
    defs: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
    starting: set[str] = set()
    fixtures: set[str] = set()
    changed = True
    while changed:
        changed = False
        names = spawner.names | starting
        for name, node in defs.items():
            if name in starting:
                continue
            # only tests and fixtures get fixtures through their parameters
            uses_fixture = (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and (name.startswith("test") or _fixture_name(node) is not None)
                            and bool(_params(node) & (spawner.fixtures | fixtures)))
            if uses_fixture or _starts_directly(node, imports, names):
                starting.add(name)
                changed = True
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fixture = _fixture_name(node)
                    if fixture is not None:
                        fixtures.add(fixture)
    return starting, fixtures


def _marks(decorators: list[ast.expr]) -> set[str]:
    found: set[str] = set()
    for deco in decorators:
        for sub in ast.walk(deco):
            if isinstance(sub, ast.Attribute) and (_dotted(sub.value) or "").endswith("mark"):
                found.add(sub.attr)
    return found


def _module_marks(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            found |= _marks([node.value])
    return found


def learn(paths: list[Path]) -> Spawner:
    """The helpers and fixtures of the non-test modules (conftest.py, *_helpers.py, …) that start
    processes; followed across modules until nothing changes."""
    spawner = Spawner()
    trees = [ast.parse(p.read_text("utf-8"), str(p)) for p in paths]
    while True:
        before = (len(spawner.names), len(spawner.fixtures))
        for tree in trees:
            names, fixtures = _spawning(tree, spawner)
            spawner.names |= {n for n in names if _fixture_or_public(n)}
            spawner.fixtures |= fixtures
        if (len(spawner.names), len(spawner.fixtures)) == before:
            return spawner


def _fixture_or_public(name: str) -> bool:
    return not name.startswith("_") or name.startswith("__")


def unmarked(source: str, filename: str, spawner: Spawner) -> list[str]:
    """The tests of one module that start a process (directly, through a helper or a fixture)
    without the ``integration`` marker (on the test, its class, or the module's pytestmark)."""
    tree = ast.parse(source, filename)
    if MARKER in _module_marks(tree):
        return []
    starting, _ = _spawning(tree, spawner)
    missing: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_marks = _marks(node.decorator_list)
            for item in node.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and item.name.startswith("test") and MARKER not in class_marks
                        and MARKER not in _marks(item.decorator_list)
                        and _test_starts(item, tree, spawner, starting)):
                    missing.append(f"{filename}::{node.name}::{item.name}")
        elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.name.startswith("test") and MARKER not in _marks(node.decorator_list)
              and node.name in starting):
            missing.append(f"{filename}::{node.name}")
    return missing


def _test_starts(node: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module,
                 spawner: Spawner, starting: set[str]) -> bool:
    return bool(_params(node) & spawner.fixtures) or _starts_directly(
        node, _imports(tree), spawner.names | starting)

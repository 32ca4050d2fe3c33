"""The store roles match their backends and their callers, checked from the code (no store opened).

Two directions, with ``inspect`` and ``ast``: every backend class implements every member of
every role (``velesmem.store.roles``) with the declared signature; and every use of a store in
velesmem (``store.<name>``, ``self.store.<name>``, ``self._store.<name>``) names a declared
member and passes arguments that member's declared signature accepts.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

import velesmem
from velesmem.store.protocol import ROLES, CurationStore, SharedStore, Store
from velesmem.store.sqlite.backend import SqliteStore

try:
    from velesmem.store.postgres.backend import PostgresStore
except ImportError:  # the postgres extra is not installed
    PostgresStore = None  # type: ignore[assignment,misc]

BACKENDS = [SqliteStore] + ([PostgresStore] if PostgresStore is not None else [])
PACKAGE = Path(velesmem.__file__).parent
# Modules whose ``store`` is not a velesmem store: the backends themselves, the context
# compiler's ``ContextStore`` (kept in the memory service's facts), and the OS trust store.
NOT_OUR_STORE = ("store/", "context/", "service/system_trust.py")
RECEIVERS = ("store", "_store")
SERVICE_DIRS = ("memory", "extract", "migration", "context", "consolidate", "importers")


def _own_annotations(role: type) -> dict[str, str]:
    """The data members a role (and the roles it extends) declares, with their annotations."""
    out: dict[str, str] = {}
    for klass in reversed(role.__mro__):
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        out.update({k: str(v) for k, v in vars(klass).get("__annotations__", {}).items()})
    return out


def members(role: type) -> dict[str, Any]:
    """name → the role's declaration: a function, a property, or an annotation string."""
    found: dict[str, Any] = dict(_own_annotations(role))
    for klass in role.__mro__:
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and (inspect.isfunction(value)
                                             or isinstance(value, property)):
                found.setdefault(name, value)
    return found


def _init_attributes(cls: type) -> dict[str, str | None]:
    """``self.<name>`` set in ``cls.__init__`` → its annotation (None: not annotated)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))  # type: ignore[misc]
    out: dict[str, str | None] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        annotation = None
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets, annotation = [node.target], ast.unparse(node.annotation)
        for t in targets:
            if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                    and t.value.id == "self"):
                out.setdefault(t.attr, annotation)
    return out


def _normalized(annotation: Any) -> str:
    return str(annotation).replace(" ", "")


def conformance_problems(backend: type, role: type) -> list[str]:
    """How ``backend`` departs from ``role``: missing members, other signatures."""
    problems = []
    attributes = _init_attributes(backend)
    for name, declared in members(role).items():
        if isinstance(declared, str):  # a data member
            if name in attributes:
                got = attributes[name]
                if got is not None and _normalized(got) != _normalized(declared):
                    problems.append(f"{name}: annotated {got}, declared {declared}")
            elif not hasattr(backend, name):
                problems.append(f"{name}: missing (declared {declared})")
            continue
        impl = inspect.getattr_static(backend, name, None)
        if impl is None:
            problems.append(f"{name}: missing")
        elif isinstance(declared, property):
            if not isinstance(impl, property) and name not in attributes:
                problems.append(f"{name}: declared a property, is {type(impl).__name__}")
        elif not inspect.isfunction(impl):
            problems.append(f"{name}: declared a method, is {type(impl).__name__}")
        else:
            problems.extend(f"{name}: {p}" for p in _signature_problems(declared, impl))
    return problems


def _signature_problems(declared: Any, impl: Any) -> Iterator[str]:
    want, got = inspect.signature(declared), inspect.signature(impl)
    if list(want.parameters) != list(got.parameters):
        yield f"parameters {list(got.parameters)}, declared {list(want.parameters)}"
        return
    for name, w in want.parameters.items():
        g = got.parameters[name]
        if w.kind != g.kind:
            yield f"{name} is {g.kind.description}, declared {w.kind.description}"
        if _normalized(w.annotation) != _normalized(g.annotation):
            yield f"{name}: {g.annotation}, declared {w.annotation}"
        has_default = w.default is not inspect.Parameter.empty
        if has_default != (g.default is not inspect.Parameter.empty) or (
                has_default and not callable(w.default) and w.default != g.default):
            yield f"{name}: default {g.default!r}, declared {w.default!r}"
    if _normalized(want.return_annotation) != _normalized(got.return_annotation):
        yield f"returns {got.return_annotation}, declared {want.return_annotation}"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.__name__)
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_every_backend_implements_every_role_member_with_the_declared_signature(
        backend: type, role: type) -> None:
    assert conformance_problems(backend, role) == []


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_every_backend_is_a_store(backend: type) -> None:
    assert conformance_problems(backend, Store) == []


def test_the_postgres_backend_implements_the_shared_store_api() -> None:
    if PostgresStore is None:
        pytest.skip("the postgres extra is not installed")
    assert conformance_problems(PostgresStore, SharedStore) == []


def test_the_sqlite_backend_implements_the_curation_cursor() -> None:
    assert conformance_problems(SqliteStore, CurationStore) == []


def test_store_is_exactly_the_union_of_the_roles() -> None:
    union: dict[str, Any] = {}
    for role in ROLES:
        overlap = set(union) & set(members(role)) - {"close"}  # every handle closes
        assert not overlap, f"{role.__name__} repeats {overlap}"
        union.update(members(role))
    assert set(members(Store)) == set(union)


def test_the_checker_reports_a_missing_member_and_a_changed_signature() -> None:
    class Partial:
        backend = "partial"

        def __init__(self) -> None:
            self.location = "here"
            self.warm_done = False

        def start(self) -> None: ...

        def warm(self, progress: object) -> None: ...  # no ``cancelled``

    problems = conformance_problems(Partial, ROLES[0])
    assert any(p.startswith("close: missing") for p in problems)
    assert any(p.startswith("warm: parameters") for p in problems)


# --- the callers' side ---------------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    where: str
    name: str
    call: ast.Call | None


def _is_store(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "store"
    return (isinstance(node, ast.Attribute) and node.attr in RECEIVERS
            and isinstance(node.value, ast.Name) and node.value.id != "velesmem")


def store_uses(root: Path = PACKAGE) -> Iterator[Use]:
    """Every ``<store>.<name>`` in velesmem outside the store package, with its call if any."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(NOT_OUR_STORE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_store(node.value):
                yield Use(f"{rel}:{node.lineno}", node.attr, calls.get(id(node)))


def _declared() -> dict[str, Any]:
    return {**members(SharedStore), **members(CurationStore), **members(Store)}


def call_problems(uses: Iterator[Use]) -> list[str]:
    declared = _declared()
    problems = []
    for use in uses:
        member = declared.get(use.name)
        if member is None:
            problems.append(f"{use.where}: store.{use.name} is declared by no role")
            continue
        if use.call is None or not inspect.isfunction(member):
            continue
        call = use.call
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            continue
        try:
            inspect.signature(member).bind(None, *call.args,
                                           **{k.arg: k.value for k in call.keywords if k.arg})
        except TypeError as exc:
            problems.append(f"{use.where}: store.{use.name}(...) does not fit its declaration: "
                            f"{exc}")
    return problems


def test_every_store_use_in_velesmem_is_declared_with_the_arguments_passed() -> None:
    uses = list(store_uses())
    assert len(uses) > 50  # the scan sees the services' calls
    assert call_problems(iter(uses)) == []


def test_the_caller_scan_reports_an_undeclared_member_and_an_undeclared_argument(
        tmp_path: Path) -> None:
    (tmp_path / "svc.py").write_text(
        "def f(store, self):\n"
        "    store.warm(progress, cancelled, 3)\n"
        "    self._store.feedback(1, True, now=2.0, weight=3)\n"
        "    store.compact()\n"
        "    self.store.remember(w)\n", encoding="utf-8")
    problems = call_problems(store_uses(tmp_path))
    assert len(problems) == 3, problems
    assert "store.warm" in problems[0]
    assert "store.feedback" in problems[1] and "weight" in problems[1]
    assert "store.compact is declared by no role" in problems[2]


def test_services_are_given_roles_not_the_whole_store() -> None:
    """Only the Runtime (and the maintenance commands it serves) hold a ``Store``."""
    holders = []
    for folder in SERVICE_DIRS:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.arg) and node.annotation is not None and (
                        ast.unparse(node.annotation) in ("Store", "'Store'")):
                    holders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.arg}")
    assert holders == []

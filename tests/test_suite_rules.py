"""The suite's own rules, checked: no test asserts a duration or sleeps and then asserts that
nothing happened (timings live in bench/bounds.py), and a resource a test leaks fails it."""

from __future__ import annotations

import ast
import itertools
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
DURATION_NAMES = ("elapsed", "took", "latenc", "duration", "_s_taken")


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py")
                  if "node_modules" not in p.parts and p.parent.name != "support")


def _is_clock(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CLOCKS and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "time")


def _is_ceiling(compare: ast.Compare) -> bool:
    """``time.monotonic() < end``: a wait's ceiling (a loop giving up), not a measurement."""
    right = compare.comparators[0]
    return (len(compare.ops) == 1 and isinstance(compare.ops[0], (ast.Lt, ast.LtE))
            and _is_clock(compare.left) and isinstance(right, ast.Name)
            and any(word in right.id.lower() for word in ("end", "deadline")))


def _measured(expr: ast.expr) -> bool:
    """``expr`` is a clock reading, a duration variable, or arithmetic / max / min / sum over
    them (a clock passed to another function as "now" is not a measurement)."""
    if _is_clock(expr):
        return True
    if isinstance(expr, ast.Name):
        return any(part in expr.id.lower() for part in DURATION_NAMES)
    if isinstance(expr, ast.BinOp):
        return _measured(expr.left) or _measured(expr.right)
    if isinstance(expr, ast.UnaryOp):
        return _measured(expr.operand)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in (
            "max", "min", "sum", "float", "abs"):
        return any(_measured(arg) for arg in expr.args)
    if isinstance(expr, ast.Subscript):
        return _measured(expr.value)
    return False


def _measures(compare: ast.Compare) -> bool:
    """A comparison of a clock reading or a duration (not of a count such as ``len(xs)``)."""
    return any(_measured(side) for side in (compare.left, *compare.comparators))


def duration_asserts(source: str, filename: str) -> list[str]:
    """``assert`` statements comparing a clock reading or a duration variable."""
    tree = ast.parse(source, filename)
    return [f"{filename}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Assert) and any(
                isinstance(sub, ast.Compare) and _measures(sub) and not _is_ceiling(sub)
                for sub in ast.walk(node.test))]


def sleeps_then_asserts(source: str, filename: str) -> list[str]:
    """A ``time.sleep``/``asyncio.sleep`` statement directly followed by an ``assert``: a test
    that waits a fixed time and then checks, which passes whatever happens on a slow machine."""
    tree = ast.parse(source, filename)
    found = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for first, second in itertools.pairwise(body):
            call = first.value if isinstance(first, ast.Expr) else None
            if isinstance(call, ast.Await):
                call = call.value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "sleep" and isinstance(second, ast.Assert)):
                found.append(f"{filename}:{first.lineno}")
    return found


def test_no_test_asserts_a_duration() -> None:
    found = [hit for path in _test_modules()
             for hit in duration_asserts(path.read_text("utf-8"), str(path.relative_to(REPO)))]
    assert found == [], ("a duration asserted in a test (note it with tests.support.bounds.record "
                         "and let bench/bounds.py compare it):\n" + "\n".join(found))


def test_no_test_sleeps_and_then_asserts() -> None:
    found = [hit for path in _test_modules()
             for hit in sleeps_then_asserts(path.read_text("utf-8"), str(path.relative_to(REPO)))]
    assert found == [], ("a fixed sleep before an assert (wait for a positive signal with "
                         "tests.support.wait_for):\n" + "\n".join(found))


def test_the_duration_check_finds_an_elapsed_bound_and_a_sleep_but_not_a_ceiling() -> None:
    source = '''
import time

def test_fast():
    started = time.monotonic()
    work()
    assert time.monotonic() - started < 2

def test_quiet():
    elapsed = measure()
    assert elapsed < 5.0, elapsed

def test_nothing_happens():
    poke()
    time.sleep(0.3)
    assert calls == []

def test_counts():
    assert len(latencies) >= 5
    assert store.unembedded(time.time()) != []

def test_slowest():
    assert max(latencies) < 3.0

def test_reads_until_a_ceiling():
    end = time.monotonic() + 60
    while not done():
        assert time.monotonic() < end, "never done"
'''
    assert duration_asserts(source, "t.py") == ["t.py:7", "t.py:11", "t.py:23"]
    assert sleeps_then_asserts(source, "t.py") == ["t.py:15"]


def test_resource_warnings_are_errors_in_the_suites_configuration() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    filters = config["ini_options"]["filterwarnings"]
    assert filters[0] == "error"
    assert not any("ResourceWarning" in f and f.startswith("ignore") for f in filters), filters


def test_a_test_that_leaks_a_file_fails(pytester: pytest.Pytester) -> None:
    """Under the suite's own warning filters, a file a test opens and drops unclosed fails it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
    filters = config["ini_options"]["filterwarnings"]
    pytester.makeini("[pytest]\nfilterwarnings =\n" + "".join(f"    {f}\n" for f in filters))
    pytester.makepyfile(test_leaky='''
def test_leaks_a_file(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    handle = open(path)
    handle.read()
    del handle  # never closed

def test_closes_its_file(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    with open(path) as handle:
        handle.read()
''')
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*test_leaks_a_file*"])

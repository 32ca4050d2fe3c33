"""Every benchmark script still imports against the current code (they are never run by the
suite, so a renamed helper would otherwise surface only when someone measures)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py"))


@pytest.fixture
def bench_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """bench/ first on sys.path, as when a script runs; its modules forgotten afterwards."""
    monkeypatch.syspath_prepend(str(BENCH))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name in SCRIPTS or name.startswith(PREFIX):
            del sys.modules[name]


PREFIX = "velesmem_bench_"


def load(script: str) -> object:
    """bench/<script>.py executed as a module of its own name: a test package called like a
    script (tests/store/postgres) must not stand in for it."""
    spec = importlib.util.spec_from_file_location(PREFIX + script, BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_there_are_scripts() -> None:
    assert {"engine", "http_load", "semantic", "postgres"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_imports(script: str, bench_on_path: None) -> None:
    module = load(script)
    if not script.startswith("_"):
        assert callable(getattr(module, "main", None)), f"bench/{script}.py has no main()"


def test_every_target_is_read_from_a_benchmark_the_sweep_runs(bench_on_path: None) -> None:
    targets = load("targets")
    runs = {run.name for run in targets.RUNS}
    assert {target.run for target in targets.TARGETS} <= runs
    assert set(SCRIPTS) >= runs

"""bench/import_synth.py writes each source's format as its reader reads it: n items give n facts,
nothing skipped, and the links the generator draws all land."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from velesmem.importers.plan import plan_path

SYNTH = Path(__file__).resolve().parents[2] / "bench" / "import_synth.py"
N = 120


def _synth():
    spec = importlib.util.spec_from_file_location("velesmem_bench_import_synth", SYNTH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.parametrize("source, edges", [
    ("mcp-memory-service", N // 50 + len(range(7, N, 20))),  # versions + associations
    ("basic-memory", 2 * N + N // 10 - 1),  # about + mentions per fact, a relation per note
    ("mem0", None),
])
def test_n_generated_items_plan_as_n_facts_with_nothing_skipped(
        tmp_path: Path, source: str, edges: int | None) -> None:
    synth = _synth()
    path = synth.GENERATORS[source](N, tmp_path / source)
    plan = plan_path(source, path, 1_800_000_000.0)
    assert plan.user_facts == N
    assert plan.skipped == [] and plan.repeated == 0
    if edges is not None:
        assert len(plan.edges) == edges
    again = plan_path(source, synth.GENERATORS[source](N, tmp_path / "again"), 1_800_000_000.0)
    assert [f.id for f in again.facts] == [f.id for f in plan.facts]  # seeded: same texts

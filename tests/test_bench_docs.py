"""The benchmark figures in the docs are the ones in bench/results/*.json: docs/benchmarks.md and
the README's targets table are rendered from them by bench/render.py, and fail here when stale."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
BENCH_MODULES = {p.stem for p in BENCH.glob("*.py")}


@pytest.fixture
def render(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """bench/render.py imported as a script imports it (bench/ first on sys.path), then forgotten."""
    monkeypatch.syspath_prepend(str(BENCH))
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location("velesmem_bench_render", BENCH / "render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name in set(sys.modules) - before:
        if name in BENCH_MODULES:
            del sys.modules[name]


def _copy_results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    return results


def test_benchmarks_doc_and_readme_table_match_the_committed_results(render: ModuleType) -> None:
    stale = render.stale()
    assert not stale, f"out of date: {stale}; run python3 bench/render.py and commit the result"


def test_every_results_file_gets_a_section(render: ModuleType) -> None:
    doc = render.render()
    names = sorted(p.stem for p in RESULTS.glob("*.json"))
    assert names, "no results committed under bench/results/"
    for name in names:
        heading = render.RENDERERS[name][0] if name in render.RENDERERS else f"## {name} (`bench/results/{name}.json`)"
        assert f"\n{heading}\n" in doc, f"bench/results/{name}.json has no section"


def test_a_results_file_without_a_renderer_is_rendered_generically(render: ModuleType, tmp_path: Path) -> None:
    results = _copy_results(tmp_path)
    (results / "zz_new.json").write_text(json.dumps({
        "command": "python3 /some/checkout/bench/zz_new.py --n 3", "machine": "a test box",
        "rows": [{"facts": 1000, "p50_ms": 1.25}, {"facts": 10000, "p50_ms": 2.5}],
        "summary": {"rate_per_s": 412.0}}), encoding="utf-8")
    doc = render.render(results)
    section = doc.split("## zz_new (`bench/results/zz_new.json`)\n", 1)[1]
    assert "| facts | p50_ms |" in section
    assert "| 10000 | 2.5 |" in section
    assert "| `summary.rate_per_s` | 412 |" in section
    assert "Measured with `python3 bench/zz_new.py --n 3` on a test box." in section


def test_a_changed_figure_makes_both_generated_files_stale(render: ModuleType, tmp_path: Path) -> None:
    results = _copy_results(tmp_path)
    doc, readme = tmp_path / "benchmarks.md", tmp_path / "README.md"
    doc.write_text(render.render(results), encoding="utf-8")
    readme.write_text(render.render_readme((ROOT / "README.md").read_text(encoding="utf-8"), results),
                      encoding="utf-8")
    assert render.stale(results, doc, readme) == []
    data = json.loads((results / "remember_cpu.json").read_text(encoding="utf-8"))
    data["x_bare_fastmcp"] = 9.99
    (results / "remember_cpu.json").write_text(json.dumps(data), encoding="utf-8")
    assert render.stale(results, doc, readme) == [doc, readme]


def test_readme_table_says_not_measured_for_a_target_without_results(render: ModuleType, tmp_path: Path) -> None:
    empty = tmp_path / "results"
    empty.mkdir()
    table = render.targets_table(empty)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "not measured" in line]
    assert len(rows) == len(render.TARGETS)
    assert "0 of 0 measured targets met" in table


def test_readme_benchmarks_section_holds_one_table_and_no_dated_sittings() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Benchmarks\n", 1)[1].split("\n## ", 1)[0]
    begin, end = "<!-- render.py: targets begin", "<!-- render.py: targets end -->"
    assert readme.count(begin) == 1 and readme.count(end) == 1
    outside = section.split(begin, 1)[0] + section.split(end, 1)[1]
    assert not [line for line in outside.splitlines() if line.startswith("|")], "a second table"
    assert "sitting," not in section and "2026-" not in section


def test_a_run_without_a_targets_row_is_shown_as_not_in_it(render: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "http_scale.json").write_text(json.dumps({
        "command": "python3 bench/http_scale.py --sizes 1000", "machine": "a test box",
        "rows": [{"facts": 1000, "recall_p50_ms": 4.0, "peak_rss_mib": 120.0}]}), encoding="utf-8")
    rows = [line for line in render.targets_table(results).splitlines() if "bench/http_scale.py --sizes 1000" in line]
    scale_targets = [t for t in render.TARGETS if t.run == "http_scale"]
    assert len(rows) == len(scale_targets) and all("not in the committed run" in row for row in rows)

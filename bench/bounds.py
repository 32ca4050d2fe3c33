"""Time bounds the test suite used to assert: measured here, never in the tests.

A loaded machine is slow, not wrong, so no test asserts a duration. The tests that do something
with a time budget (a hook's 2 s deadline, a second daemon refused at once, connections cut at
their timeout, adversarial input scanned in linear time, …) note how long it took with
``tests.support.bounds.record``. This script runs those test modules with
``VELESMEM_BOUNDS_FILE`` set, so each figure comes from the very code path the test checks,
compares the worst figure of each with its bound (and its floor, for "waited its deadline"), and
writes bench/results/bounds.json; ``python3 bench/render.py`` puts it in docs/benchmarks.md.
Exit status 1 when a bound was missed or a test failed.

Run: python3 bench/bounds.py [-k EXPR] [--modules tests/agents/test_hooks.py ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load_average, print_table, write_results

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
BOUNDS_MODULE = "tests.support.bounds"


def recording_modules() -> list[Path]:
    """The test modules that import tests.support.bounds (the ones that note durations)."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        if any(isinstance(node, ast.ImportFrom) and node.module == BOUNDS_MODULE
               for node in ast.walk(tree)):
            found.append(path)
    return found


def run_tests(modules: list[Path], keyword: str | None, sink: Path) -> tuple[int, float]:
    """pytest on ``modules`` with the bounds sink set; its exit code and wall time."""
    env = {**os.environ, "VELESMEM_BOUNDS_FILE": str(sink)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           *(str(m.relative_to(REPO)) for m in modules)]
    if keyword:
        cmd += ["-k", keyword]
    started = time.monotonic()
    code = subprocess.run(cmd, cwd=REPO, env=env, check=False).returncode
    return code, time.monotonic() - started


def summarise(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per bound name: how many figures, the best and the worst, and whether every
    figure sat between the floor and the bound."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_name.setdefault(line["name"], []).append(line)
    out = []
    for name, rows in sorted(by_name.items()):
        seconds = [r["seconds"] for r in rows]
        bound = min(r["bound_s"] for r in rows)
        floor = max(r["floor_s"] for r in rows)
        out.append({"name": name, "runs": len(seconds), "min_s": min(seconds),
                    "max_s": max(seconds), "bound_s": bound, "floor_s": floor,
                    "met": max(seconds) < bound and min(seconds) >= floor})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", nargs="*", type=Path,
                        help="test modules to run (default: every module that notes a bound)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--out", type=Path, help="result file (default bench/results/bounds.json)")
    args = parser.parse_args()
    modules = [m.resolve() for m in args.modules] if args.modules else recording_modules()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="velesmem-bounds-") as scratch:
        sink = Path(scratch) / "bounds.jsonl"
        sink.touch()
        code, wall = run_tests(modules, args.keyword, sink)
        lines = [json.loads(line) for line in sink.read_text(encoding="utf-8").splitlines() if line]
    entries = summarise(lines)
    print_table(["bound", "runs", "worst", "best", "floor", "bound", "met"],
                [[e["name"], e["runs"], f"{e['max_s']:.3f} s", f"{e['min_s']:.3f} s",
                  f"{e['floor_s']:g} s" if e["floor_s"] else "", f"{e['bound_s']:g} s",
                  "yes" if e["met"] else "NO"] for e in entries])
    met = sum(e["met"] for e in entries)
    print(f"{met} of {len(entries)} bounds met; pytest exit {code} after {wall:.0f} s; "
          f"load {load_before} → {load_average()}")
    path = write_results("bounds", {
        "entries": entries, "pytest_exit": code, "wall_s": round(wall, 1),
        "modules": [str(m.relative_to(REPO)) for m in modules], "keyword": args.keyword,
        "load_before": load_before, "load_after": load_average()}, args.out)
    print(f"wrote {path}")
    raise SystemExit(0 if code == 0 and met == len(entries) else 1)


if __name__ == "__main__":
    main()

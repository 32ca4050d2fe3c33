"""Helpers shared by the benchmarks: machine description, percentiles, JSON results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# Measure this checkout, whatever velesmem the interpreter has installed (import _common first).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def machine() -> str:
    """One line naming the machine a figure was measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def load_average() -> str:
    """The 1/5/15-minute load averages, printed beside each figure (the machine is shared)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0–100) by nearest rank; values need not be sorted."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def command() -> str:
    """The command line that reproduces this run, the script named from the checkout's root."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    root = Path(__file__).resolve().parents[1]
    argv = list(sys.argv)
    if script is not None and script.is_relative_to(root):
        argv[0] = str(script.relative_to(root))
    return " ".join(["python3", *argv])


def write_results(name: str, payload: dict[str, Any], path: Path | None = None) -> Path:
    """Write a benchmark's figures as JSON (default bench/results/<name>.json); return the path."""
    path = path or RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"command": command(), "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """Print a Markdown table, so figures paste straight into notes."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


def embedder_overrides(name: str) -> dict[str, Any]:
    """Settings fields for an ``--embedder`` value: a backend name (``local``) or a local graph's
    model identity (``local:all-MiniLM-L6-v2-int8``, to compare the graphs)."""
    if name.startswith("local:"):
        return {"embedder": "local", "local_model": name}
    return {"embedder": name}

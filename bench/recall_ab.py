"""Recall latency of this checkout against an earlier revision, side by side in one process.

On a shared machine two benchmark runs minutes apart differ by more than most changes do (the
exact baseline of ``engine.py`` moved 7.8 → 13.8 ms in one afternoon). This script exports the
``velesmem`` package of ``--baseline`` (a git revision) under another name, opens the same store
with each in turn, and times the same queries with both, alternating which goes first, so the
two share the machine's state. Uses the ``engine.py`` corpus (hash embedder); the store is built
once under ``--store`` and reused.

Run: python3 bench/recall_ab.py --baseline HEAD~2 [--facts 100000] [--mode hybrid|vector]
     [--rounds 4] [--queries 400] [--store DIR]
"""

from __future__ import annotations

import argparse
import importlib
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from _common import load_average, machine, median, percentile, print_table
from engine import SEED, make_corpus, make_queries, remember_all

CHECKOUT = Path(__file__).resolve().parent.parent
BASELINE_PACKAGE = "velesmem_baseline"


def export_baseline(revision: str, into: Path) -> None:
    """``velesmem/`` at ``revision``, renamed ``velesmem_baseline`` (its imports too)."""
    archive = subprocess.run(["git", "-C", str(CHECKOUT), "archive", revision, "velesmem"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "velesmem").rename(into / BASELINE_PACKAGE)
    pattern = re.compile(r"\b(from|import) velesmem\b")
    for path in (into / BASELINE_PACKAGE).rglob("*.py"):
        path.write_text(pattern.sub(rf"\1 {BASELINE_PACKAGE}", path.read_text()))


def recall_p50(package: str, store: Path, mode: str, queries: list[str]) -> tuple[float, float]:
    """(p50, p99) ms of one recall at a time with ``package``'s MemoryService."""
    config = importlib.import_module(f"{package}.config")
    top = importlib.import_module(package)
    settings = config.Settings(path=store, recall_mode=mode, embedder="hash", autograph="off")
    if hasattr(top, "open"):  # velesmem.open(path) -> Runtime
        opened = top.open(store, settings=settings).memory
    else:  # a baseline from before it: MemoryService.open
        opened = importlib.import_module(f"{package}.memory.service").MemoryService.open(
            store, settings=settings)
    with opened as svc:
        for q in queries[:20]:  # warm the index and the page caches
            svc.recall(q, k=10)
        times = []
        for q in queries:
            start = time.perf_counter()
            svc.recall(q, k=10)
            times.append((time.perf_counter() - start) * 1000)
    return median(times), percentile(times, 99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare against")
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--mode", choices=("hybrid", "vector"), default="hybrid")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--store", type=Path, help="store to build once and reuse")
    args = parser.parse_args()
    facts = make_corpus(args.facts, random.Random(SEED))
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        if not (store / "memory.sqlite3").exists():
            print(f"building a {args.facts:,}-fact store in {store} …", file=sys.stderr)
            import velesmem
            from velesmem.config import Settings
            settings = Settings(path=store, embedder="hash", autograph="off")
            with velesmem.open(store, settings=settings).memory as svc:
                remember_all(svc, facts, 8)
        export_baseline(args.baseline, Path(tmp))
        sys.path.insert(0, tmp)
        runs: dict[str, list[tuple[float, float]]] = {"baseline": [], "this checkout": []}
        packages = {"baseline": BASELINE_PACKAGE, "this checkout": "velesmem"}
        for name in packages:  # a discarded round: the store's pages into the OS cache
            recall_p50(packages[name], store, args.mode, make_queries(50, facts, random.Random(0)))
        for n in range(args.rounds):
            queries = make_queries(args.queries, facts, random.Random(SEED + n))
            order = list(packages) if n % 2 else list(packages)[::-1]
            for name in order:
                runs[name].append(recall_p50(packages[name], store, args.mode, queries))
                print(f"round {n + 1}: {name} p50 {runs[name][-1][0]:.2f} ms", file=sys.stderr)
    rows = [[name, " / ".join(f"{p50:.2f}" for p50, _ in got),
             f"{median([p50 for p50, _ in got]):.2f}", f"{median([p99 for _, p99 in got]):.2f}"]
            for name, got in runs.items()]
    print_table(["code", f"{args.mode} recall p50 per round ms", "median p50 ms",
                 "median p99 ms"], rows)
    base = median([p50 for p50, _ in runs["baseline"]])
    this = median([p50 for p50, _ in runs["this checkout"]])
    print(f"\nthis checkout / baseline {args.baseline}: {this / base:.2f}x p50; "
          f"{args.facts:,} facts; load average {load_average()}")
    print(f"reproduce: python3 bench/recall_ab.py --baseline {args.baseline} --facts "
          f"{args.facts} --mode {args.mode} --rounds {args.rounds} --queries {args.queries}")
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()

"""Autograph's cost to the writer: remember's acknowledged latency with autograph off and on.

Autograph links a fact after ``remember`` is acknowledged, through a bounded queue, so the
acknowledged latency should not move. Facts carry the identifiers coding agents write (ticket
keys, PR numbers, paths, symbols). Both runs are interleaved in one process (off, on, off, on)
on fresh stores; the table prints the medians of the runs.

    python3 bench/autograph.py [--facts 2000] [--callers 8] [--rounds 2] [--embedder hash]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from _common import command, machine, median, percentile, print_table, write_results

from velesmem.config import Settings
from velesmem.runtime import Runtime


def text(i: int) -> str:
    return (f"PR #{i % 300} touches src/worker/pool_{i % 50}.rs and fixes EPIC-{i % 120}; "
            f"WorkerPool.drain now waits (note {i})")


def one_run(mode: str, facts: int, callers: int, embedder: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        rt = Runtime.open(Settings(path=Path(tmp), autograph=mode, embedder=embedder))
        rt.wait_ready_sync(60)
        latencies: list[float] = []
        lock = threading.Lock()
        peak = [0]

        def work(c: int) -> None:
            mine = []
            for i in range(c, facts, callers):
                start = time.perf_counter()
                rt.memory.remember(text(i))
                mine.append(time.perf_counter() - start)
                peak[0] = max(peak[0], rt.autograph._queue.qsize())
            with lock:
                latencies.extend(mine)

        began = time.perf_counter()
        threads = [threading.Thread(target=work, args=(c,)) for c in range(callers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        drained = rt.autograph.wait_idle(300)
        linked_s = time.perf_counter() - began
        edges = rt.memory.memory_status().memory["edges"]
        rt.close()
    return {"p50_ms": median(latencies) * 1000, "p99_ms": percentile(latencies, 99) * 1000,
            "per_s": facts / wall, "peak_queue": float(peak[0]),
            "linked_s": linked_s if drained else float("nan"),
            "dropped": float(rt.autograph.dropped), "edges": float(edges)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--callers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--embedder", default="hash",
                        help="hash (default: the writer's cost alone), or local (the model's too)")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"off": [], "identifiers": []}
    for _ in range(args.rounds):
        for mode in runs:
            runs[mode].append(one_run(mode, args.facts, args.callers, args.embedder))
    summary = {mode: {k: median([r[k] for r in rs]) for k in rs[0]} for mode, rs in runs.items()}
    print(f"remember with autograph off vs on: {args.facts} facts, {args.callers} callers, "
          f"{args.rounds} rounds each (medians), embedder {args.embedder}")
    print_table(["autograph", "remember p50", "p99", "facts/s", "peak queue", "dropped",
                 "all linked after", "edges"],
                [[mode, f"{s['p50_ms']:.2f} ms", f"{s['p99_ms']:.2f} ms", f"{s['per_s']:,.0f}",
                  f"{s['peak_queue']:.0f}", f"{s['dropped']:.0f}", f"{s['linked_s']:.1f} s",
                  f"{s['edges']:.0f}"] for mode, s in summary.items()])
    ratio = summary["identifiers"]["p50_ms"] / summary["off"]["p50_ms"]
    print(f"\nacknowledged p50, on / off: {ratio:.2f}")
    print(f"reproduce: {command()}\nmachine: {machine()}")
    print(f"results: {write_results('autograph', {'args': vars(args), 'summary': summary})}")


if __name__ == "__main__":
    main()

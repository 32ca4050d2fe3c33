"""The HTTPS daemon as its store grows: write rate, recall latency and resident memory per size.

Starts one ``velesdb-memory --http`` (temp store and TLS dirs, the hash embedder unless
``--embedder``), then fills it through ``--writers`` concurrent MCP clients over strict TLS up to
each size of ``--sizes`` in turn. At each size it stops writing and measures, from one client:
``--queries`` recall calls (k=10, a query made of words of a stored fact), one after another.
Prints, per size: the write rate over the segment that reached it (acknowledged remembers/s), the
recall p50/p99, and the daemon's resident memory (now, and its peak so far — the peak is reached
while writing). Writes bench/results/http_scale.json.

Run: python3 bench/http_scale.py [--sizes 1000 10000 100000] [--writers 4] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine, percentile, print_table, write_results
from _daemon import Served, curated, load_average, memory_mib, process_cpu_s, start_daemon

SEED = 20261201
VOCAB = 20_000
WORDS = 14


def _fact(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(f"w{rng.randrange(VOCAB)}" for _ in range(WORDS))


async def fill(served: Served, start: int, stop: int, writers: int, errors: list[str]) -> tuple[float, float]:
    """Remember facts ``start..stop-1`` over ``writers`` clients; (wall s until the last
    acknowledgement, daemon CPU s until the daemon has also checked them for duplicates and
    updates, which it does after acknowledging: recall is probed after that)."""
    counter = iter(range(start, stop))

    async def writer(index: int) -> None:
        async with served.client() as client:
            for i in counter:
                fact = _fact(random.Random(SEED + i), i)
                try:
                    result = await client.call_tool("remember", {"fact": fact})
                except Exception as exc:  # noqa: BLE001 — counted and reported
                    errors.append(repr(exc))
                    continue
                if result.is_error:
                    errors.append(str(result.content))

    cpu0 = process_cpu_s(served.pid)
    t0 = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    wall = time.perf_counter() - t0
    await curated(served)
    return wall, process_cpu_s(served.pid) - cpu0


async def probe(served: Served, size: int, queries: int) -> list[float]:
    """Recall latencies (ms) of ``queries`` sequential calls over facts below ``size``."""
    rng = random.Random(SEED - size)
    out: list[float] = []
    async with served.client() as client:
        await client.call_tool("recall", {"query": "warm up", "k": 10})
        for _ in range(queries):
            i = rng.randrange(size)
            words = _fact(random.Random(SEED + i), i).split()[2:]
            query = " ".join(rng.sample(words, 6))
            t0 = time.perf_counter()
            result = await client.call_tool("recall", {"query": query, "k": 10})
            out.append((time.perf_counter() - t0) * 1000)
            if result.is_error:
                raise SystemExit(f"recall failed: {result.content}")
    return out


async def run(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    served = start_daemon(root, args.embedder)
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        await probe(served, 1, 1)  # one answered call: the state a client first meets
        idle = memory_mib(served.pid)
        rows.append({"facts": 0, "write_per_s": "", "write_cpu_ms": "", "recall_p50_ms": "",
                     "recall_p99_ms": "", "rss_mib": round(idle["rss"], 1),
                     "peak_rss_mib": round(idle["peak"], 1), "anon_mib": round(idle["anon"], 1),
                     "file_mib": round(idle["file"], 1), "errors": 0, "load": load_average()})
        done = 0
        for size in sorted(args.sizes):
            wall, cpu = await fill(served, done, size, args.writers, errors)
            written = size - done
            done = size
            mem_written = memory_mib(served.pid)
            latencies = await probe(served, size, args.queries)
            mem = memory_mib(served.pid)
            row = {"facts": size, "write_per_s": round(written / wall, 1),
                   "write_cpu_ms": round(cpu * 1000 / written, 2),
                   "recall_p50_ms": round(percentile(latencies, 50), 2),
                   "recall_p99_ms": round(percentile(latencies, 99), 2),
                   "rss_mib": round(mem_written["rss"], 1), "peak_rss_mib": round(mem["peak"], 1),
                   "anon_mib": round(mem_written["anon"], 1), "file_mib": round(mem_written["file"], 1),
                   "errors": len(errors), "load": load_average()}
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    finally:
        served.stop()
    if errors:
        print(f"{len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--writers", type=int, default=4, help="concurrent writing clients")
    parser.add_argument("--queries", type=int, default=200, help="sequential recalls per size")
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="velesmem-http-scale-") as tmp:
        rows = asyncio.run(run(args, Path(tmp)))
    print(f"\nHTTPS daemon as the store grows: {args.writers} writing clients, then "
          f"{args.queries} sequential recalls (k=10) per size, embedder {args.embedder}")
    print(f"machine: {machine()}")
    print(f"command: python3 bench/http_scale.py --sizes {' '.join(map(str, args.sizes))} "
          f"--writers {args.writers} --queries {args.queries} --embedder {args.embedder}\n")
    keys = ["facts", "write_per_s", "write_cpu_ms", "recall_p50_ms", "recall_p99_ms", "rss_mib",
            "anon_mib", "file_mib", "peak_rss_mib", "errors", "load"]
    print_table(keys, [[row[k] for k in keys] for row in rows])
    print("\nwrite_per_s / write_cpu_ms: over the segment that reached the size; rss_mib: when that "
          "segment ended (anon: heap; file: mapped files, SQLite's mmap included); peak_rss_mib: the "
          "daemon's high-water mark so far.")
    path = write_results("http_scale", {"writers": args.writers, "queries": args.queries,
                                        "embedder": args.embedder, "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

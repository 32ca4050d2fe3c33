"""The HTTPS write rate at a small and a large store, side by side: how much a big store slows writes.

Prebuilds one store per size of ``--sizes`` in-process (hash embedder, facts shaped like
``http_scale.py``'s), then, for ``--rounds`` rounds in alternating order, starts a daemon on a
fresh copy of each store and has ``--writers`` MCP clients over strict TLS remember ``--writes``
new facts. Prints per size the rate of every round (acknowledged remembers/s), the median rate
and daemon CPU per remember, and the median of the per-round ratios to the smallest size.

Why alternate: this machine's speed drifts by 15 % to 2× within minutes, so a rate
measured at 1k in one minute and at 100k ten minutes later (``http_scale.py``, one growing store)
carries that drift in its ratio; rounds that alternate the sizes cancel it. The default 3,000
writes keep the 1k store below the size where new vectors go into the HNSW graph, as the first
segment of ``http_scale.py`` is. Writes bench/results/write_scale.json.

Run: python3 bench/write_scale.py [--sizes 1000 100000] [--writes 3000] [--rounds 4] [--writers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import machine, print_table, write_results
from _daemon import Served, load_average, start_daemon
from http_scale import SEED, _fact, fill

import velesmem
from velesmem.config import Settings

PREBUILD_WRITERS = 4
AUTOGRAPH_CATCH_UP_S = 600.0


def prebuild(store: Path, size: int) -> None:
    """A store of ``size`` facts, written in-process from a few threads, index saved."""
    settings = Settings(path=store, embedder="hash")
    with velesmem.open(store, settings=settings) as runtime:
        svc = runtime.memory

        def work(first: int) -> None:
            for i in range(first, size, PREBUILD_WRITERS):
                svc.submit_remember(_fact(random.Random(SEED + i), i)).result()

        threads = [threading.Thread(target=work, args=(w,)) for w in range(PREBUILD_WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if not runtime.autograph.wait_idle(AUTOGRAPH_CATCH_UP_S):
            raise SystemExit(f"autograph still busy {AUTOGRAPH_CATCH_UP_S:.0f} s after prebuilding")
        if not svc.settle(AUTOGRAPH_CATCH_UP_S):  # every fact checked: no backlog in a round
            raise SystemExit(f"curation still busy {AUTOGRAPH_CATCH_UP_S:.0f} s after prebuilding")


async def burst(served: Served, start: int, writes: int, writers: int) -> tuple[float, float, int]:
    """``writes`` new facts from ``writers`` clients (``http_scale.fill``) once the store is
    ready: (remembers/s, daemon CPU ms per remember, errors)."""
    async with served.client() as client:
        await client.call_tool("recall", {"query": "warm up", "k": 1})
    errors: list[str] = []
    wall, cpu = await fill(served, start, start + writes, writers, errors)
    return writes / wall, cpu * 1000 / writes, len(errors)


def measure(store: Path, work: Path, start: int, args: argparse.Namespace) -> tuple[float, float, int]:
    """One round at one size: a daemon on a fresh copy of ``store``."""
    root = Path(tempfile.mkdtemp(prefix="round-", dir=work))
    try:
        shutil.copytree(store, root / "store")
        served = start_daemon(root, "hash")
        try:
            return asyncio.run(burst(served, start, args.writes, args.writers))
        finally:
            served.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--writes", type=int, default=3000, help="remembers per round and size")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--writers", type=int, default=4, help="concurrent writing clients")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes))
    rates: dict[int, list[float]] = {size: [] for size in sizes}
    cpus: dict[int, list[float]] = {size: [] for size in sizes}
    errors = 0
    with tempfile.TemporaryDirectory(prefix="velesmem-write-scale-") as tmp:
        work = Path(tmp)
        stores = {size: work / f"store-{size}" for size in sizes}
        for size, store in stores.items():
            t0 = time.perf_counter()
            prebuild(store, size)
            print(f"prebuilt {size} facts in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        for r in range(args.rounds):
            for size in sizes if r % 2 == 0 else sizes[::-1]:
                # facts no store holds yet, the same ones for every size in a round
                rate, cpu, errs = measure(stores[size], work, 10 * max(sizes) * (r + 1), args)
                rates[size].append(rate)
                cpus[size].append(cpu)
                errors += errs
                print(f"round {r} size {size}: {rate:.1f} remembers/s, daemon {cpu:.2f} ms per "
                      f"remember, load {load_average()}", file=sys.stderr, flush=True)
    base = sizes[0]
    rows: list[dict[str, Any]] = []
    for size in sizes:
        ratios = [a / b for a, b in zip(rates[size], rates[base])]
        rows.append({"facts": size, "rounds_per_s": " / ".join(f"{x:.0f}" for x in rates[size]),
                     "median_per_s": round(statistics.median(rates[size]), 1),
                     "daemon_cpu_ms": round(statistics.median(cpus[size]), 2),
                     f"x_{base}": round(statistics.median(ratios), 3)})
    print(f"\nHTTPS write rate by store size: {args.writers} clients remember {args.writes} new facts "
          f"into a daemon on a copy of a prebuilt store, {args.rounds} alternating rounds, embedder hash")
    print(f"machine: {machine()}; errors: {errors}")
    print(f"command: python3 bench/write_scale.py --sizes {' '.join(map(str, sizes))} --writes "
          f"{args.writes} --rounds {args.rounds} --writers {args.writers}\n")
    keys = list(rows[0])
    print_table(keys, [[row[k] for k in keys] for row in rows])
    print(f"\nx_{base}: the median over rounds of (rate at this size / rate at {base} in the same round).")
    path = write_results("write_scale", {"writes": args.writes, "rounds": args.rounds,
                                         "writers": args.writers, "errors": errors, "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

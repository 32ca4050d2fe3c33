"""The dashboard at 100k facts: page load latency, and the /mcp remember rate while it refreshes.

A store of ``--facts`` facts (hash embedder) is built in-process once and cached under
``--cache``: notes of random words, every tenth naming a ticket (``OPS-<n>``) so the autograph
links them into a graph, plus the demo's two decision → PR → ticket chains
(``velesmem.agents.demo``). A daemon (``velesdb-memory --http``) serves a copy of it over strict
TLS; once it is ready:

1. **Page loads**: ``--loads`` GETs of each page, one after another, from one HTTPS client that
   verifies the daemon's CA: the Memories page, a search, a fact page, a why question and the
   Status page (the server's whole answer, read to the end). p50/p95/max per page.
2. **Remember rate beside the dashboard**: ``--rounds`` pairs of rounds, alternating: in each,
   ``--writers`` MCP clients remember ``--writes`` new facts; in the second round of a pair a
   viewer reloads the five pages in turn, one every ``--refresh-s`` seconds (a browser tab left
   open and refreshing) throughout. Compared by medians.

Targets (issue 27): page load p95 <= 300 ms at 100k facts; remember rate with the dashboard
refreshing within 10 % of without.

Run: python3 bench/dashboard.py [--facts 100000] [--loads 40] [--rounds 5] [--writes 600]
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
from urllib.parse import quote_plus

import httpx
from _common import load_average, machine, percentile, print_table, write_results
from _daemon import Served, start_daemon

import velesmem
from velesmem.agents.demo import CHAINS
from velesmem.config import Settings
from velesmem.daemon.tls import client_ssl_context

SEED = 20261205
VOCAB = 20_000
WORDS = 12
TICKETS = 2_000
BUILD_WRITERS = 4
AUTOGRAPH_CATCH_UP_S = 1_800.0
READY_DEADLINE_S = 600.0
TARGET_P95_MS = 300.0
TARGET_RATE_LOSS = 0.10


def fact_text(i: int) -> str:
    rng = random.Random(SEED + i)
    words = " ".join(f"w{rng.randrange(VOCAB)}" for _ in range(WORDS))
    ticket = f" see OPS-{rng.randrange(TICKETS)}" if i % 10 == 0 else ""
    return f"note {i}: {words}{ticket}"


def build(store: Path, facts: int) -> None:
    """``facts`` notes and the demo's chains, written in-process; the autograph caught up."""
    settings = Settings(path=store, embedder="hash", autograph="identifiers")
    with velesmem.open(store, settings=settings) as runtime:
        svc = runtime.memory
        for chain in CHAINS:
            ids = {role: svc.remember(getattr(chain, role)).id for role in ("ticket", "pr", "decision")}
            for src, relation, dst in chain.relations:
                svc.relate(ids[src], ids[dst], relation)
        errors: list[BaseException] = []

        def work(first: int) -> None:
            try:
                for i in range(first, facts, BUILD_WRITERS):
                    svc.remember(fact_text(i))
            except BaseException as exc:  # noqa: BLE001 — surfaced after join
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(BUILD_WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        if not runtime.autograph.wait_idle(AUTOGRAPH_CATCH_UP_S):
            raise SystemExit("the autograph did not catch up with the build")


def wait_ready(served: Served) -> None:
    end = time.monotonic() + READY_DEADLINE_S
    with httpx.Client(verify=client_ssl_context(served.ca), timeout=10) as http:
        while http.get(f"{served.base}/health").json().get("state") != "ready":
            if time.monotonic() > end:
                raise SystemExit("the daemon did not get ready in time")
            time.sleep(0.2)


def pages(fact_id: str) -> dict[str, str]:
    """The pages measured: name → path."""
    question = CHAINS[0].question
    return {"memories": "/", "search": "/?q=" + quote_plus(fact_text(4242).split(":", 1)[1][:40]),
            "fact": f"/fact/{fact_id}", "why": "/why?q=" + quote_plus(question),
            "status": "/status"}


def a_fact_id(served: Served) -> str:
    async def ask() -> str:
        async with served.client() as client:
            result = await client.call_tool("recall", {"query": CHAINS[0].pr, "k": 1})
            return str(result.structured_content["memories"][0]["id_str"])  # type: ignore[index]
    return asyncio.run(ask())


def page_loads(served: Served, paths: dict[str, str], loads: int) -> list[dict[str, Any]]:
    rows = []
    with httpx.Client(verify=client_ssl_context(served.ca), timeout=30) as http:
        for name, path in paths.items():
            for _ in range(3):  # warm: templates compiled, caches filled
                http.get(served.base + path).raise_for_status()
            times = []
            size = 0
            for _ in range(loads):
                t0 = time.perf_counter()
                answer = http.get(served.base + path)
                times.append((time.perf_counter() - t0) * 1000)
                answer.raise_for_status()
                size = len(answer.content)
            rows.append({"page": name, "path": path[:48], "loads": loads, "bytes": size,
                         "p50_ms": round(percentile(times, 50), 1),
                         "p95_ms": round(percentile(times, 95), 1),
                         "max_ms": round(max(times), 1)})
            print(f"{name}: p95 {rows[-1]['p95_ms']} ms, load {load_average()}", file=sys.stderr,
                  flush=True)
    return rows


async def remember_round(served: Served, first: int, writes: int, writers: int) -> float:
    """``writes`` remembers of new facts from ``writers`` clients: acknowledged per second."""
    counter = iter(range(first, first + writes))
    failures: list[str] = []

    async def writer() -> None:
        async with served.client() as client:
            for i in counter:
                result = await client.call_tool("remember", {"fact": fact_text(i)})
                if result.is_error:
                    failures.append(str(result.content)[:200])

    t0 = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    wall = time.perf_counter() - t0
    if failures:
        raise SystemExit(f"{len(failures)} remembers failed: {failures[0]}")
    return writes / wall


async def viewer(served: Served, paths: list[str], refresh_s: float, stop: asyncio.Event,
                 loads: list[float]) -> None:
    """A dashboard tab refreshing: one page every ``refresh_s``, the pages in turn."""
    async with httpx.AsyncClient(verify=client_ssl_context(served.ca), timeout=30) as http:
        n = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            (await http.get(served.base + paths[n % len(paths)])).raise_for_status()
            loads.append((time.perf_counter() - t0) * 1000)
            n += 1
            try:
                await asyncio.wait_for(stop.wait(), refresh_s)
            except TimeoutError:
                pass


async def side_by_side(served: Served, paths: list[str], args: argparse.Namespace
                       ) -> dict[str, Any]:
    without: list[float] = []
    beside: list[float] = []
    loads: list[float] = []
    first = 10 * args.facts
    for r in range(args.rounds):
        for dashboard in (False, True) if r % 2 == 0 else (True, False):
            stop = asyncio.Event()
            task = asyncio.create_task(viewer(served, paths, args.refresh_s, stop, loads)) \
                if dashboard else None
            rate = await remember_round(served, first, args.writes, args.writers)
            first += args.writes
            if task is not None:
                stop.set()
                await task
            (beside if dashboard else without).append(rate)
            print(f"round {r} dashboard {'on ' if dashboard else 'off'}: {rate:.1f} remembers/s, "
                  f"load {load_average()}", file=sys.stderr, flush=True)
    a, b = statistics.median(without), statistics.median(beside)
    return {"without_per_s": [round(x, 1) for x in without],
            "beside_per_s": [round(x, 1) for x in beside],
            "median_without": round(a, 1), "median_beside": round(b, 1),
            "ratio": round(b / a, 3), "viewer_loads": len(loads),
            "viewer_p95_ms": round(percentile(loads, 95), 1) if loads else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=40, help="GETs per page")
    parser.add_argument("--rounds", type=int, default=5, help="pairs of remember rounds")
    parser.add_argument("--writes", type=int, default=600, help="remembers per round")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--refresh-s", type=float, default=1.0, help="the viewer's reload interval")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    cached = args.cache / f"velesmem-dashboard-{args.facts}-{SEED}"
    built_s = None
    if not (cached / "done").exists():
        shutil.rmtree(cached, ignore_errors=True)
        t0 = time.perf_counter()
        build(cached / "store", args.facts)
        built_s = round(time.perf_counter() - t0, 1)
        (cached / "done").write_text("ok")
        print(f"built {args.facts} facts in {built_s} s", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="velesmem-dashboard-") as tmp:
        root = Path(tmp)
        shutil.copytree(cached / "store", root / "store")
        served = start_daemon(root, "hash", {"VELESDB_MEMORY_AUTOGRAPH": "identifiers"})
        try:
            wait_ready(served)
            paths = pages(a_fact_id(served))
            rows = page_loads(served, paths, args.loads)
            rate = asyncio.run(side_by_side(served, list(paths.values()), args))
        finally:
            served.stop()
    worst = max(row["p95_ms"] for row in rows)
    print(f"\nDashboard pages at {args.facts:,} facts: {args.loads} loads each over strict TLS, "
          "one after another")
    print(f"machine: {machine()}; load {load_average()}")
    print(f"command: python3 bench/dashboard.py --facts {args.facts} --loads {args.loads} "
          f"--rounds {args.rounds} --writes {args.writes} --writers {args.writers} "
          f"--refresh-s {args.refresh_s:g}\n")
    keys = list(rows[0])
    print_table(keys, [[row[k] for k in keys] for row in rows])
    print(f"\npage load p95 target <= {TARGET_P95_MS:.0f} ms: "
          f"{'met' if worst <= TARGET_P95_MS else 'missed'} (worst {worst} ms)")
    print(f"\n/mcp remember rate, {args.writers} clients x {args.writes} remembers per round, "
          f"{args.rounds} pairs of rounds; beside: a viewer reloading a page every "
          f"{args.refresh_s:g} s")
    print_table(["without (per s)", "beside (per s)", "median without", "median beside", "ratio"],
                [[" / ".join(map(str, rate["without_per_s"])), " / ".join(map(str, rate["beside_per_s"])),
                  rate["median_without"], rate["median_beside"], rate["ratio"]]])
    met = rate["ratio"] >= 1 - TARGET_RATE_LOSS
    print(f"\nremember rate with the dashboard refreshing within {TARGET_RATE_LOSS:.0%} of "
          f"without (ratio of medians >= {1 - TARGET_RATE_LOSS:g}): {'met' if met else 'missed'} "
          f"({rate['ratio']}x)")
    path = write_results("dashboard", {"facts": args.facts, "built_s": built_s, "pages": rows,
                                       "worst_p95_ms": worst, "remember": rate,
                                       "writers": args.writers, "writes": args.writes,
                                       "rounds": args.rounds, "refresh_s": args.refresh_s,
                                       "load": load_average()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

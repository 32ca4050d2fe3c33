"""HTTPS daemon under load, side by side with a bare FastMCP server on the same transport.

For each N (default 1 and 8) and each round (default 3), in alternating order:

- **bare**: the FastMCP floor (``_bare_fastmcp.py``: one trivial tool, no guards, no store, TLS,
  uvicorn with h11 on asyncio); N clients each call it ``--ops`` times; when the daemon serves on
  another of uvicorn's stacks here (httptools, uvloop: ``velesmem.daemon.server.serving_stack``),
  a second bare server on that same stack too, so both ratios can be quoted;
- **velesmem**: a fresh ``velesdb-memory --http`` (temp store and TLS dirs, free port, the hash
  embedder unless ``--embedder``); N clients each ``remember`` ``--ops`` new facts, then each do
  ``--ops`` rounds of remember + recall(that fact, k=10). Every acknowledged remember is then
  looked for in the store (``lost`` counts the missing ones).

Every client is a fastmcp ``Client`` over strict TLS verified against the server's CA, connected
and warmed by one call before the clock and the server's CPU counter start. Prints medians over
the rounds: calls/s, per-call p50/p99, the server's CPU time per call, and velesmem's CPU per
remember as a ratio to the bare server's per call, in the same run (``x_bare``; ``x_same_stack``
against the bare server on the daemon's stack). The clients share the
machine's cores with the server. Writes bench/results/http_load.json.

Run: python3 bench/http_load.py [--clients 1 8] [--ops 200] [--rounds 3] [--embedder hash]
     [--env NAME=VALUE ...] [--bare-defaults]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import machine, percentile, print_table, write_results
from _daemon import Served, curated, load_average, process_cpu_s, start_bare, start_daemon

SEED = 20261130
LIST_PAGE = 1000  # list_memories' page cap

Call = Callable[[Any, int], Awaitable[None]]  # (client, op index) → one timed unit of work


def _fact(rng: random.Random, tag: str, i: int) -> str:
    return f"{tag} note {i}: " + " ".join(f"w{rng.randrange(5000)}" for _ in range(12))


async def drive(served: Served, n: int, ops: int, tag: str,
                work: Callable[[random.Random, str], Call], settle: bool = False) -> dict[str, Any]:
    """N connected, warmed clients run ``ops`` units of ``work`` each; the server's CPU and the
    wall clock cover only the timed part. With ``settle`` (velesmem), the CPU also covers the
    duplicate and update checks the daemon runs after acknowledging the remembers: it is read
    once they are done (``settled_s``: how long after the last call)."""
    go = asyncio.Event()
    ready = 0
    all_ready = asyncio.Event()
    latencies: list[float] = []
    errors: list[str] = []
    acked: list[str] = []

    async def one(index: int) -> None:
        nonlocal ready
        rng = random.Random(f"{SEED}-{tag}-{n}-{index}")
        call = work(rng, f"{tag} n{n} client {index}")
        async with served.client() as client:
            await client.call_tool("remember", {"fact": f"{tag} n{n} warm-up {index}"})
            acked.append(f"{tag} n{n} warm-up {index}")
            ready += 1
            if ready == n:
                all_ready.set()
            await go.wait()
            for i in range(ops):
                t0 = time.perf_counter()
                try:
                    fact = await call(client, i)
                except Exception as exc:  # noqa: BLE001 — counted and reported, never hidden
                    errors.append(repr(exc))
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)
                if fact:
                    acked.append(fact)

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    waiter = asyncio.create_task(all_ready.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if not all_ready.is_set():  # a client failed to connect
        await asyncio.gather(*tasks)
    cpu0 = process_cpu_s(served.pid)
    t0 = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    if settle:
        await curated(served)
    settled = time.perf_counter() - t0 - wall
    cpu = process_cpu_s(served.pid) - cpu0
    if errors:
        print(f"  {tag} N={n}: {len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    return {"units": len(latencies), "errors": len(errors), "wall_s": wall, "cpu_s": cpu,
            "settled_s": settled,
            "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
            "acked": acked}


def remember_only(rng: random.Random, tag: str) -> Call:
    async def call(client: Any, i: int) -> str:
        fact = _fact(rng, tag, i)
        result = await client.call_tool("remember", {"fact": fact})
        if result.is_error:
            raise RuntimeError(str(result.content))
        return fact
    return call


def remember_recall(rng: random.Random, tag: str) -> Call:
    async def call(client: Any, i: int) -> str:
        fact = _fact(rng, tag, i)
        await client.call_tool("remember", {"fact": fact})
        result = await client.call_tool("recall", {"query": fact, "k": 10})
        if result.is_error:
            raise RuntimeError(str(result.content))
        return fact
    return call


async def stored_contents(served: Served) -> set[str]:
    """Every fact's content in the daemon's store, walked with list_memories."""
    seen: set[str] = set()
    cursor = None
    async with served.client() as client:
        while True:
            args: dict[str, Any] = {"limit": LIST_PAGE}
            if cursor is not None:
                args["cursor"] = cursor
            page = (await client.call_tool("list_memories", args)).structured_content
            seen.update(m["content"] for m in page["memories"])
            cursor = page["next_cursor"]
            if cursor is None:
                return seen


def _row(kind: str, n: int, run: dict[str, Any], calls_per_unit: int) -> dict[str, Any]:
    calls = run["units"] * calls_per_unit
    return {"server": kind, "clients": n, "calls": calls, "errors": run["errors"],
            "units_per_s": run["units"] / run["wall_s"], "calls_per_s": calls / run["wall_s"],
            "p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"],
            "cpu_ms_per_call": run["cpu_s"] * 1000 / max(calls, 1)}


PINNED_STACK = ("asyncio", "h11")


async def bare_round(n: int, ops: int, root: Path, defaults: bool = False,
                     stack: tuple[str, str] = PINNED_STACK) -> dict[str, Any]:
    served = start_bare(root, defaults, stack)
    label = "bare FastMCP defaults, trivial tool" if defaults else "bare FastMCP, trivial tool"
    if stack != PINNED_STACK:
        label += f" ({', '.join(stack)})"
    try:
        return _row(label, n, await drive(served, n, ops, "bare", remember_only), 1)
    finally:
        served.stop()


async def velesmem_round(n: int, ops: int, root: Path, embedder: str,
                         env: dict[str, str]) -> list[dict[str, Any]]:
    served = start_daemon(root, embedder, env)
    try:
        writes = await drive(served, n, ops, "remember", remember_only, settle=True)
        mixed = await drive(served, n, ops, "mixed", remember_recall, settle=True)
        stored = await stored_contents(served)
    finally:
        served.stop()
    acked = set(writes["acked"]) | set(mixed["acked"])
    lost = len(acked - stored)
    write_row = _row("velesmem remember", n, writes, 1) | {"lost": lost}
    mixed_row = _row("velesmem remember + recall", n, mixed, 2) | {"lost": lost}
    return [write_row, mixed_row]


def _median_rows(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            out[key] = round(statistics.median(r[key] for r in runs), 2)
    out["errors"] = sum(r["errors"] for r in runs)
    if "lost" in out:
        out["lost"] = sum(r["lost"] for r in runs)
    out["rounds"] = len(runs)
    return out


def _ratio(runs: list[dict[str, Any]], floor: list[dict[str, Any]]) -> float:
    """Median over the rounds of CPU per call / the floor's CPU per call in the same round."""
    return round(statistics.median(r["cpu_ms_per_call"] / f["cpu_ms_per_call"] for r, f in zip(runs, floor)), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--ops", type=int, default=200, help="calls (or call pairs) per client per phase")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved bare/velesmem rounds; medians")
    parser.add_argument("--embedder", default="hash", help="the daemon's embedder (default hash)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the daemon (repeatable), e.g. "
                             "OPENBLAS_NUM_THREADS=2 to compare with the default")
    parser.add_argument("--bare-defaults", action="store_true",
                        help="also run the bare server with FastMCP's default http_app options")
    args = parser.parse_args()
    daemon_env = dict(item.split("=", 1) for item in args.env)
    try:
        from velesmem.daemon.server import serving_stack
        ours = serving_stack()
    except ImportError:  # a checkout from before the function existed: h11 on asyncio
        ours = PINNED_STACK
    load_before = load_average()
    rows: list[dict[str, Any]] = []
    for n in args.clients:
        bare: list[dict[str, Any]] = []
        bare_defaults: list[dict[str, Any]] = []
        bare_ours: list[dict[str, Any]] = []
        writes: list[dict[str, Any]] = []
        mixed: list[dict[str, Any]] = []
        for r in range(args.rounds):  # alternate who goes first: drift in the machine's load hits both
            with tempfile.TemporaryDirectory(prefix="velesmem-http-load-") as tmp:
                order = ("bare", "velesmem") if r % 2 == 0 else ("velesmem", "bare")
                for kind in order:
                    if kind == "bare":
                        bare.append(asyncio.run(bare_round(n, args.ops, Path(tmp) / "bare")))
                        if args.bare_defaults:
                            bare_defaults.append(asyncio.run(bare_round(n, args.ops, Path(tmp) / "bare-d", True)))
                        if ours != PINNED_STACK:
                            bare_ours.append(asyncio.run(bare_round(n, args.ops, Path(tmp) / "bare-s",
                                                                    stack=ours)))
                    else:
                        w, m = asyncio.run(velesmem_round(n, args.ops, Path(tmp) / "v", args.embedder,
                                                             daemon_env))
                        writes.append(w)
                        mixed.append(m)
        ratios = [w["cpu_ms_per_call"] / b["cpu_ms_per_call"] for w, b in zip(writes, bare)]
        rows.append(_median_rows(bare) | {"x_bare": 1.0})
        if bare_defaults:
            rows.append(_median_rows(bare_defaults) | {"x_bare": round(statistics.median(
                d["cpu_ms_per_call"] / b["cpu_ms_per_call"] for d, b in zip(bare_defaults, bare)), 2)})
        same: dict[str, Any] = {}
        if bare_ours:
            rows.append(_median_rows(bare_ours) | {"x_bare": _ratio(bare_ours, bare), "x_same_stack": 1.0})
            same = {"x_same_stack": _ratio(writes, bare_ours)}
        rows.append(_median_rows(writes) | {"x_bare": round(statistics.median(ratios), 2)} | same)
        mixed_ratios = [m["cpu_ms_per_call"] / b["cpu_ms_per_call"] for m, b in zip(mixed, bare)]
        if bare_ours:
            same = {"x_same_stack": _ratio(mixed, bare_ours)}
        rows.append(_median_rows(mixed) | {"x_bare": round(statistics.median(mixed_ratios), 2)} | same)
    load_after = load_average()
    print(f"\nHTTPS, N concurrent MCP clients, {args.ops} calls (or remember + recall pairs) each, "
          f"medians of {args.rounds} interleaved rounds, embedder {args.embedder}")
    print(f"machine: {machine()}")
    print(f"load average before: {load_before}; after: {load_after}")
    print(f"command: python3 bench/http_load.py --clients {' '.join(map(str, args.clients))} "
          f"--ops {args.ops} --rounds {args.rounds} --embedder {args.embedder}"
          f"{''.join(f' --env {item}' for item in args.env)}"
          f"{' --bare-defaults' if args.bare_defaults else ''}\n")
    try:
        from velesmem.daemon.app import HTTP_APP_OPTIONS
    except ImportError:
        HTTP_APP_OPTIONS = {}
    print(f"bare FastMCP: the daemon's http_app options {HTTP_APP_OPTIONS or '(FastMCP defaults)'}; "
          f"uvicorn stack {', '.join(PINNED_STACK)}; the daemon's here: {', '.join(ours)}\n")
    keys = ["clients", "server", "calls", "errors", "lost", "calls_per_s", "p50_ms", "p99_ms",
            "cpu_ms_per_call", "x_bare"] + (["x_same_stack"] if ours != PINNED_STACK else [])
    print_table(keys, [[row.get(k, "") for k in keys] for row in rows])
    print("\nx_bare: server CPU per call / the bare FastMCP server's CPU per call in the same round "
          "(median of the per-round ratios); a remember + recall row counts each pair as 2 calls.")
    if ours != PINNED_STACK:
        print(f"x_same_stack: the same, against the bare server on the daemon's stack ({', '.join(ours)}).")
    path = write_results("http_load", {"ops_per_client": args.ops, "rounds": args.rounds,
                                       "embedder": args.embedder, "load_before": load_before,
                                       "load_after": load_after, "stack": list(ours), "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

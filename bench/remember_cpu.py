"""Daemon CPU per ``remember`` over HTTPS against two bare MCP servers, side by side in one run.

Three servers run at once, each its own process on the same transport (streamable HTTP on ``/mcp``
over TLS, uvicorn on the daemon's event loop and HTTP parser): a fresh ``velesdb-memory --http`` (temp store and TLS dirs, the hash embedder
unless ``--embedder``), the bare FastMCP server (``_bare_fastmcp.py``) and the bare MCP SDK server
(``_bare_sdk.py``), both serving one trivial ``remember`` tool that stores nothing. Each round, in
an order rotated from round to round so the machine's drift hits all three, one strict-TLS
fastmcp ``Client`` per server (connected and warmed by one call first) calls ``remember`` ``--ops``
times with a new fact each time; the server process's CPU time (user + system, from /proc) over
those calls, divided by the calls, is that round's CPU per call. The daemon's is read once its
curation lane has checked every fact remembered (duplicates and updates are checked after the
acknowledgement), so it covers that work too. Prints the medians over the rounds
and the ratios (median of the per-round ratios) of the daemon's CPU per remember to each bare
server's CPU per call; checks that every acknowledged fact is in the daemon's store. Writes
bench/results/remember_cpu.json, with the commit of the checkout measured.

Run: python3 bench/remember_cpu.py [--ops 200] [--rounds 7] [--clients 1] [--embedder hash]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import command, load_average, machine, print_table, write_results
from _daemon import CHECKOUT, Served, start_bare, start_daemon
from http_load import drive, remember_only, stored_contents

TARGET_X = 1.5  # the daemon's CPU per remember ≤ 1.5× a bare server's CPU per trivial call
SERVERS = ("velesmem", "bare FastMCP", "bare MCP SDK")


def commit() -> dict[str, str]:
    """The checkout's commit, the last commit that changed velesmem/ (the code measured), and
    whether velesmem/ has uncommitted changes, for the record."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True,
                              check=False).stdout.strip()
    return {"commit": git("rev-parse", "--short", "HEAD"), "subject": git("log", "-1", "--format=%s"),
            "velesmem_commit": git("log", "-1", "--format=%h %s", "--", "velesmem"),
            "velesmem_modified": "yes" if git("status", "--porcelain", "--", "velesmem") else "no"}


def _round(served: Served, tag: str, n: int, ops: int, settle: bool) -> dict[str, Any]:
    run = asyncio.run(drive(served, n, ops, tag, remember_only, settle=settle))
    calls = max(run["units"], 1)
    return {"cpu_ms_per_call": run["cpu_s"] * 1000 / calls, "calls": run["units"], "errors": run["errors"],
            "p50_ms": run["p50_ms"], "calls_per_s": run["units"] / run["wall_s"], "acked": run["acked"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200, help="remember calls per client per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; medians over them")
    parser.add_argument("--clients", type=int, default=1, help="concurrent clients per server")
    parser.add_argument("--embedder", default="hash", help="the daemon's embedder (default hash)")
    args = parser.parse_args()
    try:  # the daemon's uvicorn stack (event loop, HTTP parser): the bare servers run on it too
        from velesmem.daemon.server import serving_stack
        stack = serving_stack()
    except ImportError:
        stack = ("asyncio", "h11")
    load_before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    per: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVERS}
    with tempfile.TemporaryDirectory(prefix="velesmem-remember-cpu-") as tmp:
        root = Path(tmp)
        servers = {"velesmem": start_daemon(root / "daemon", args.embedder),
                   "bare FastMCP": start_bare(root / "fastmcp", stack=stack),
                   "bare MCP SDK": start_bare(root / "sdk", stack=stack, script="_bare_sdk.py")}
        try:
            for r in range(args.rounds):
                order = SERVERS[r % 3:] + SERVERS[:r % 3]
                for name in order:
                    per[name].append(_round(servers[name], f"{name} r{r}", args.clients, args.ops,
                                            settle=name == "velesmem"))
            acked = {fact for run in per["velesmem"] for fact in run["acked"]}
            lost = len(acked - asyncio.run(stored_contents(servers["velesmem"])))
        finally:
            for served in servers.values():
                served.stop()
    load_after = load_average()

    def med(name: str, key: str) -> float:
        return round(statistics.median(run[key] for run in per[name]), 3)

    def ratio(floor: str) -> float:
        return round(statistics.median(v["cpu_ms_per_call"] / f["cpu_ms_per_call"]
                                       for v, f in zip(per["velesmem"], per[floor])), 2)

    figures = {name: {"cpu_ms_per_call": med(name, "cpu_ms_per_call"), "p50_ms": med(name, "p50_ms"),
                      "calls_per_s": round(statistics.median(run["calls_per_s"] for run in per[name]), 1),
                      "errors": sum(run["errors"] for run in per[name]),
                      "cpu_ms_per_call_rounds": [round(run["cpu_ms_per_call"], 3) for run in per[name]]}
               for name in SERVERS}
    ratios = {"x_bare_fastmcp": ratio("bare FastMCP"), "x_bare_sdk": ratio("bare MCP SDK")}
    measured = commit()
    print(f"\nCPU per call of the server process, {args.clients} client(s), {args.ops} remembers each, "
          f"medians of {args.rounds} rotated rounds; started {started}")
    print(f"machine: {machine()}; load average before {load_before}, after {load_after}")
    print(f"uvicorn stack of all three: {', '.join(stack)} (the daemon's)")
    print(f"checkout: {measured['commit']} ({measured['subject']}); velesmem/ last changed by "
          f"{measured['velesmem_commit']}; uncommitted changes there: {measured['velesmem_modified']}")
    print(f"command: {command()}\n")
    print_table(["server", "CPU ms per call", "per round", "p50 ms", "calls/s", "errors"],
                [[name, f["cpu_ms_per_call"], " ".join(map(str, f["cpu_ms_per_call_rounds"])), f["p50_ms"],
                  f["calls_per_s"], f["errors"]] for name, f in figures.items()])
    print(f"\ndaemon / bare FastMCP: {ratios['x_bare_fastmcp']}x; daemon / bare MCP SDK: "
          f"{ratios['x_bare_sdk']}x (target <= {TARGET_X}x); lost acknowledged remembers: {lost}")
    path = write_results("remember_cpu", {
        "ops_per_client": args.ops, "rounds": args.rounds, "clients": args.clients,
        "embedder": args.embedder, "stack": list(stack), "started": started, "load_before": load_before,
        "load_after": load_after, "checkout": measured, "servers": figures, "lost": lost,
        "target_x": TARGET_X, **ratios})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Cold start: from spawning ``velesdb-memory --http`` to its first answered tool call over HTTPS.

The client (fastmcp, strict TLS against the daemon's CA) is imported and ready before the clock
starts; the daemon gets a fresh store and TLS dir each run (so the CA and leaf are generated too:
a first start), or ``--warm-tls`` reuses one TLS dir across runs (a restart). Each run times:
``/health`` answering 200, the first ``memory_status`` (needs no vectors; with the CPU the daemon
spent until it answered, a figure the other programs on a shared machine barely move), and the first
``recall`` (waits for the Runtime to be ready). Prints the median and the spread over
``--runs``, and the daemon's own import time of its heaviest modules (``-X importtime``) from one
extra run. Writes bench/results/cold_start.json. The checkout is byte-compiled first, as pip
does at install (with ``PYTHONDONTWRITEBYTECODE`` set a checkout never gets its ``.pyc`` files,
and every start would compile velesmem from source: ~0.2 s here).

Run: python3 bench/cold_start.py [--runs 5] [--embedder hash] [--warm-tls]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _common import machine, median, print_table, write_results
from _daemon import CHECKOUT, Served, daemon_env, free_port, load_average, process_cpu_s
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from velesmem.daemon.tls import client_ssl_context

DEADLINE_S = 60.0
POLL_S = 0.005


async def first_call(base: str, ca: Path, tool: str, args: dict[str, Any], t0: float) -> float:
    """Seconds from ``t0`` until ``tool`` answered (retrying until the daemon listens)."""
    while True:
        if time.perf_counter() - t0 > DEADLINE_S:
            raise SystemExit(f"no answer to {tool} within {DEADLINE_S} s")
        if not ca.exists():
            await asyncio.sleep(POLL_S)
            continue
        try:
            async with Client(StreamableHttpTransport(f"{base}/mcp", verify=client_ssl_context(ca))) as client:
                result = await client.call_tool(tool, args, raise_on_error=False)
        except Exception:  # noqa: BLE001 — not listening yet
            await asyncio.sleep(POLL_S)
            continue
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")
        return time.perf_counter() - t0


def wait_health(base: str, ca: Path, t0: float) -> float:
    while True:
        if time.perf_counter() - t0 > DEADLINE_S:
            raise SystemExit("no /health answer")
        try:
            if ca.exists() and httpx.get(f"{base}/health", verify=client_ssl_context(ca), timeout=2).status_code == 200:
                return time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        time.sleep(POLL_S)


def one_run(root: Path, embedder: str, tool: str, args: dict[str, Any], extra: list[str]) -> tuple[float, subprocess.Popen[bytes], str, Path]:
    port = free_port()
    env = daemon_env(root, port, embedder)
    base = f"https://127.0.0.1:{port}"
    ca = root / "tls" / "ca-cert.pem"
    log = (root / "daemon.log").open("wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *extra, "-m", "velesmem", "--http"], cwd=CHECKOUT,
                            env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    elapsed = asyncio.run(first_call(base, ca, tool, args, t0))
    return elapsed, proc, base, ca


def measure(root: Path, embedder: str) -> dict[str, float]:
    """One cold start: the first memory_status (and the daemon's CPU until then), then (same
    daemon) the first recall."""
    took, proc, base, ca = one_run(root, embedder, "memory_status", {}, [])
    cpu = process_cpu_s(proc.pid)
    served = Served(proc, f"{base}/mcp", base, ca, root / "daemon.log")
    try:
        t0 = time.perf_counter()
        recall = asyncio.run(first_call(base, ca, "recall", {"query": "first recall", "k": 5}, t0))
    finally:
        served.stop()
    return {"first_tool_s": took, "first_tool_cpu_s": cpu, "then_recall_s": recall}


def measure_health(root: Path, embedder: str) -> float:
    port = free_port()
    base = f"https://127.0.0.1:{port}"
    ca = root / "tls" / "ca-cert.pem"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], cwd=CHECKOUT,
                            env=daemon_env(root, port, embedder),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        return wait_health(base, ca, t0)
    finally:
        Served(proc, "", base, ca, root).stop()


def heaviest_imports(root: Path, embedder: str, top: int = 12) -> list[tuple[str, float]]:
    """The daemon's slowest top-level imports until its first answered call (-X importtime)."""
    root.mkdir(parents=True, exist_ok=True)
    took, proc, base, ca = one_run(root, embedder, "memory_status", {}, ["-X", "importtime"])
    Served(proc, "", base, ca, root).stop()
    text = (root / "daemon.log").read_text(errors="replace")
    rows = []
    for line in text.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(3)) <= 2:  # a module imported by our own code or the top level
            rows.append((m.group(4), int(m.group(2)) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--warm-tls", action="store_true", help="reuse one TLS dir (a restart, not a first start)")
    args = parser.parse_args()
    compileall.compile_dir(CHECKOUT / "velesmem", quiet=1)  # as an installed daemon has it
    load_before = load_average()
    results: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="velesmem-cold-") as tmp:
        shared_tls = Path(tmp) / "shared"
        if args.warm_tls:
            measure_health(shared_tls, args.embedder)  # creates the CA and a leaf once
        for i in range(args.runs):
            roots = [Path(tmp) / f"run{i}-health", Path(tmp) / f"run{i}-call"]
            for root in roots:
                root.mkdir()
                if args.warm_tls:
                    shutil.copytree(shared_tls / "tls", root / "tls")
            health = measure_health(roots[0], args.embedder)
            row = measure(roots[1], args.embedder) | {"health_s": health}
            results.append(row)
            print(row, file=sys.stderr, flush=True)
        imports = heaviest_imports(Path(tmp) / "imports", args.embedder)
    load_after = load_average()
    keys = ["health_s", "first_tool_s", "first_tool_cpu_s", "then_recall_s"]
    summary = {k: {"median": round(median([r[k] for r in results]), 3),
                   "min": round(min(r[k] for r in results), 3),
                   "max": round(max(r[k] for r in results), 3)} for k in keys}
    print(f"\nCold start of velesdb-memory --http ({args.runs} runs, embedder {args.embedder}, "
          f"{'reused' if args.warm_tls else 'fresh'} TLS dir, fresh store)")
    print(f"machine: {machine()}")
    print(f"load average before: {load_before}; after: {load_after}")
    print(f"command: python3 bench/cold_start.py --runs {args.runs} --embedder {args.embedder}"
          f"{' --warm-tls' if args.warm_tls else ''}\n")
    print_table(["from spawn to", "median s", "min s", "max s"],
                [["/health 200", *summary["health_s"].values()],
                 ["first tool call answered (memory_status)", *summary["first_tool_s"].values()],
                 ["  the daemon's CPU until then (user + sys)", *summary["first_tool_cpu_s"].values()],
                 ["then the first recall (after that call)", *summary["then_recall_s"].values()]])
    print("\nheaviest imports of the daemon until its first answer (cumulative s, -X importtime, one run):")
    for name, seconds in imports:
        print(f"  {seconds:6.3f}  {name}")
    path = write_results("cold_start", {"runs": results, "summary": summary, "imports": imports,
                                        "embedder": args.embedder, "warm_tls": args.warm_tls,
                                        "load_before": load_before, "load_after": load_after})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    os.environ.pop("PYTHONWARNINGS", None)
    main()

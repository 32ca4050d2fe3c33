"""``/health`` latency while the daemon is busy with heavy calls.

Starts one ``velesdb-memory --http`` (temp store, hash embedder unless ``--embedder``), stores
``--facts`` facts, then runs ``--clients`` MCP clients that call ``recall_fused`` with k=1000 in
a loop for ``--seconds``, while a separate process polls ``GET /health`` every ``--interval-ms``
over one keep-alive HTTPS connection and records each answer's latency. Prints the /health
p50/p99/max under that load (and idle, before it), the recall_fused calls/s and their p50, and
the daemon's CPU. Writes bench/results/http_health.json.

Run: python3 bench/http_health.py [--clients 8] [--seconds 20] [--facts 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine, percentile, print_table, write_results
from _daemon import Served, load_average, process_cpu_s, start_daemon

SEED = 20261202
VOCAB = 3000

POLLER = r"""
import json, sys, time, httpx
from velesmem.daemon.tls import client_ssl_context
base, ca, seconds, interval = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]) / 1000
out = []
with httpx.Client(verify=client_ssl_context(ca), timeout=10) as http:
    http.get(base + "/health")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        status = http.get(base + "/health").status_code
        out.append((time.perf_counter() - t0) * 1000 if status == 200 else -1.0)
        time.sleep(max(0.0, interval - (time.perf_counter() - t0)))
print(json.dumps(out))
"""


def _fact(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(f"w{rng.randrange(VOCAB)}" for _ in range(12))


async def fill(served: Served, n: int, writers: int = 4) -> None:
    counter = iter(range(n))

    async def writer() -> None:
        async with served.client() as client:
            for i in counter:
                await client.call_tool("remember", {"fact": _fact(random.Random(SEED + i), i)})

    await asyncio.gather(*(writer() for _ in range(writers)))


def poll_health(served: Served, seconds: float, interval_ms: float) -> subprocess.Popen[str]:
    sys_path = str(Path(__file__).resolve().parents[1])
    return subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {sys_path!r})\n" + POLLER,
                             served.base, str(served.ca), str(seconds), str(interval_ms)],
                            stdout=subprocess.PIPE, text=True)


def health_stats(poller: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = poller.communicate(timeout=600)
    values = json.loads(out)
    ok = [v for v in values if v >= 0]
    return {"polls": len(values), "failed": len(values) - len(ok),
            "p50_ms": round(percentile(ok, 50), 2), "p99_ms": round(percentile(ok, 99), 2),
            "max_ms": round(max(ok), 2) if ok else float("nan")}


async def heavy_load(served: Served, clients: int, seconds: float, k: int) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    end = time.perf_counter() + seconds

    async def one(index: int) -> None:
        rng = random.Random(SEED * 7 + index)
        async with served.client() as client:
            while time.perf_counter() < end:
                query = " ".join(f"w{rng.randrange(VOCAB)}" for _ in range(4))
                t0 = time.perf_counter()
                result = await client.call_tool("recall_fused", {"query": query, "k": k}, raise_on_error=False)
                latencies.append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    errors.append(str(result.content))

    cpu0 = process_cpu_s(served.pid)
    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(clients)))
    wall = time.perf_counter() - t0
    return {"calls": len(latencies), "errors": len(errors), "calls_per_s": round(len(latencies) / wall, 1),
            "call_p50_ms": round(percentile(latencies, 50), 1),
            "daemon_cpu_ms_per_call": round((process_cpu_s(served.pid) - cpu0) * 1000 / max(len(latencies), 1), 1),
            "first_error": errors[0] if errors else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--facts", type=int, default=3000)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="velesmem-http-health-") as tmp:
        served = start_daemon(Path(tmp), args.embedder)
        try:
            asyncio.run(fill(served, args.facts))
            idle = health_stats(poll_health(served, min(5.0, args.seconds), args.interval_ms))
            poller = poll_health(served, args.seconds, args.interval_ms)
            load = asyncio.run(heavy_load(served, args.clients, args.seconds, args.k))
            busy = health_stats(poller)
        finally:
            served.stop()
    load_after = load_average()
    print(f"\n/health while {args.clients} clients call recall_fused (k={args.k}) over {args.facts} facts "
          f"for {args.seconds:.0f} s, embedder {args.embedder}; polled every {args.interval_ms:.0f} ms")
    print(f"machine: {machine()}")
    print(f"load average before: {load_before}; after: {load_after}")
    print(f"command: python3 bench/http_health.py --clients {args.clients} --seconds {args.seconds:g} "
          f"--facts {args.facts} --k {args.k} --embedder {args.embedder}\n")
    keys = ["polls", "failed", "p50_ms", "p99_ms", "max_ms"]
    print_table(["/health", *keys], [["idle", *[idle[k] for k in keys]], ["under load", *[busy[k] for k in keys]]])
    print(f"\nrecall_fused: {load['calls']} calls, {load['errors']} errors, {load['calls_per_s']} calls/s, "
          f"p50 {load['call_p50_ms']} ms, daemon CPU {load['daemon_cpu_ms_per_call']} ms per call")
    if load["first_error"]:
        print(f"first error: {load['first_error']}")
    path = write_results("http_health", {"idle": idle, "busy": busy, "load": load, "clients": args.clients,
                                         "k": args.k, "facts": args.facts, "load_before": load_before,
                                         "load_after": load_after})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

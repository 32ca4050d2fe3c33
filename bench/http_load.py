"""HTTPS daemon under load: N concurrent MCP clients doing remember + recall.

For each N (default 1, 4, 16) starts a fresh ``velesdb-memory --http`` subprocess (temp store and
TLS dirs, free port, hash embedder) and runs N fastmcp clients at once, each over strict TLS
verified against the daemon's CA, each doing ``--ops`` rounds of remember(new fact) then
recall(that fact, k=10). Prints calls/s, per-call p50/p99 and the daemon's CPU time per call for
each N, and writes bench/results/http_load.json. The clients run on the same machine as the
daemon, so on a small box they compete with it for the cores.

Run: python3 bench/http_load.py [--clients 1 4 16] [--ops 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _common import machine, percentile, print_table, write_results
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from velesmem.daemon.tls import client_ssl_context

SEED = 20261130
START_DEADLINE_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_daemon(root: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env |= {"VELESDB_MEMORY_PATH": str(root / "store"), "VELESDB_MEMORY_TLS_DIR": str(root / "tls"),
            "VELESDB_MEMORY_HTTP_BIND": f"127.0.0.1:{port}", "HOME": str(root)}
    log = open(root / "daemon.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    ca = root / "tls" / "ca-cert.pem"
    base = f"https://127.0.0.1:{port}"
    end = time.monotonic() + START_DEADLINE_S
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"daemon exited: {(root / 'daemon.log').read_text()}")
        try:
            if ca.exists() and httpx.get(f"{base}/health", verify=client_ssl_context(ca), timeout=2).status_code == 200:
                return proc, f"{base}/mcp", ca
        except httpx.HTTPError:
            pass
        if time.monotonic() > end:
            raise SystemExit("daemon did not answer /health in time")
        time.sleep(0.05)


async def one_client(url: str, ca: Path, n_clients: int, index: int, ops: int,
                     remember_ms: list[float], recall_ms: list[float], errors: list[str]) -> None:
    rng = random.Random(SEED + 1000 * n_clients + index)
    async with Client(StreamableHttpTransport(url, verify=client_ssl_context(ca))) as client:
        for i in range(ops):
            fact = (f"n{n_clients} client {index} note {i}: "
                    + " ".join(f"w{rng.randrange(5000)}" for _ in range(12)))
            try:
                t0 = time.perf_counter()
                await client.call_tool("remember", {"fact": fact})
                t1 = time.perf_counter()
                result = await client.call_tool("recall", {"query": fact, "k": 10})
                t2 = time.perf_counter()
            except Exception as exc:  # noqa: BLE001 — counted and reported, never hidden
                errors.append(repr(exc))
                continue
            if result.is_error:
                errors.append(str(result.content))
            remember_ms.append((t1 - t0) * 1000)
            recall_ms.append((t2 - t1) * 1000)


async def run_level(url: str, ca: Path, pid: int, n: int, ops: int) -> dict[str, float | int]:
    remember_ms: list[float] = []
    recall_ms: list[float] = []
    errors: list[str] = []
    cpu0 = process_cpu_s(pid)
    t0 = time.perf_counter()
    await asyncio.gather(*(one_client(url, ca, n, i, ops, remember_ms, recall_ms, errors) for i in range(n)))
    wall = time.perf_counter() - t0
    calls = len(remember_ms) + len(recall_ms)
    daemon_cpu_ms = (process_cpu_s(pid) - cpu0) * 1000 / max(calls, 1)
    if errors:
        print(f"  N={n}: {len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    return {
        "clients": n, "calls": calls, "errors": len(errors), "wall_s": round(wall, 3),
        "calls_per_s": round(calls / wall, 1),
        "remember_p50_ms": round(percentile(remember_ms, 50), 2),
        "remember_p99_ms": round(percentile(remember_ms, 99), 2),
        "recall_p50_ms": round(percentile(recall_ms, 50), 2),
        "recall_p99_ms": round(percentile(recall_ms, 99), 2),
        "daemon_cpu_ms_per_call": round(daemon_cpu_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--ops", type=int, default=100, help="remember+recall rounds per client")
    args = parser.parse_args()
    rows = []
    for n in args.clients:  # a fresh daemon and store per level: levels do not inherit a bigger store
        with tempfile.TemporaryDirectory(prefix="velesmem-http-load-") as tmp:
            proc, url, ca = start_daemon(Path(tmp))
            try:
                rows.append(asyncio.run(run_level(url, ca, proc.pid, n, args.ops)))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
    print(f"\nHTTPS daemon load: N concurrent MCP clients, {args.ops} x (remember + recall k=10) each")
    print(f"machine: {machine()}")
    print(f"command: python3 bench/http_load.py --clients {' '.join(map(str, args.clients))} --ops {args.ops}\n")
    keys = ["clients", "calls", "errors", "calls_per_s", "remember_p50_ms", "remember_p99_ms",
            "recall_p50_ms", "recall_p99_ms", "daemon_cpu_ms_per_call"]
    print_table(keys, [[row[k] for k in keys] for row in rows])
    path = write_results("http_load", {"ops_per_client": args.ops, "levels": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

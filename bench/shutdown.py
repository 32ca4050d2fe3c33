"""How long an idle daemon with clients attached takes to exit after SIGTERM.

Each run starts one ``velesdb-memory --http`` (temp store, hash embedder), attaches what a user's
machine has: two real MCP clients that speak the 2025 handshake (``fastmcp.Client`` in legacy
mode, as mcp-remote and the Inspector: a session each, a GET stream open, one call made) and one
session opened by hand and leaked (initialized, never ended). Then it sends SIGTERM and times
signal → process exit; it also records whether both GET streams ended and the exit code. Prints
the median, min and max of ``--runs`` runs. Writes bench/results/shutdown.json (``bench/render.py``
puts it in docs/benchmarks.md).

Run: python3 bench/shutdown.py [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from _common import machine, median, print_table, write_results
from _daemon import Served, load_average, start_daemon

from velesmem.daemon.tls import client_ssl_context

LEGACY_INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "velesmem-bench", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
TARGET_S = 2.0  # issue 24: an idle daemon with clients attached exits within this of SIGTERM
STREAM_HEADERS = {"Accept": "text/event-stream", "mcp-protocol-version": "2025-06-18"}


def legacy_client(served: Served) -> Client[Any]:
    """A real MCP client speaking the 2025 handshake: a session, and a GET stream while it lives."""
    return Client(StreamableHttpTransport(served.url, verify=client_ssl_context(served.ca)), mode="legacy")


def leak_session(served: Served) -> str:
    """Initialize a session by hand and never end it (as a client that exits without DELETE)."""
    with httpx.Client(verify=client_ssl_context(served.ca), timeout=10) as http:
        r = http.post(served.url, json=LEGACY_INIT, headers=ACCEPT)
        r.raise_for_status()
        session_id = r.headers["mcp-session-id"]
        http.post(served.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                  headers=ACCEPT | {"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"})
        return session_id


async def hold_stream(http: httpx.AsyncClient, served: Served, session_id: str, opened: asyncio.Event) -> bool:
    """Hold the session's GET stream open until the daemon ends it; True if it ended cleanly."""
    try:
        async with http.stream("GET", served.url, headers=STREAM_HEADERS | {"mcp-session-id": session_id}) as r:
            opened.set()
            async for _ in r.aiter_raw():
                pass
        return True
    except httpx.HTTPError:
        return False


async def one_run(root: Path) -> dict[str, Any]:
    served = start_daemon(root)
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(legacy_client(served)) for _ in range(2)]
            for i, client in enumerate(clients):
                await client.call_tool("remember", {"fact": f"client {i} was attached at shutdown"})
            leaked = await asyncio.to_thread(leak_session, served)
            # The leaked session's own GET stream, held by hand, so its end is observed directly.
            http = await stack.enter_async_context(
                httpx.AsyncClient(verify=client_ssl_context(served.ca), timeout=httpx.Timeout(10, read=None)))
            opened = asyncio.Event()
            watcher = asyncio.create_task(hold_stream(http, served, leaked, opened))
            await asyncio.wait_for(opened.wait(), 30)
            t0 = time.perf_counter()
            served.proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(served.proc.wait, 60)
            took = time.perf_counter() - t0
            stream_ended = await asyncio.wait_for(watcher, 30)
            with contextlib.suppress(Exception):  # the clients' own close finds the daemon gone
                await stack.aclose()
    finally:
        served.stop()
    return {"exit_s": took, "exit_code": code, "stream_ended": stream_ended}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    # The clients' own DELETE at exit finds the daemon gone, as expected: not worth a warning each.
    logging.getLogger("mcp").setLevel(logging.ERROR)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="velesmem-shutdown-") as tmp:
        for i in range(args.runs):
            runs.append(asyncio.run(one_run(Path(tmp) / f"run{i}")))
            print(f"run {i + 1}/{args.runs}: exit {runs[-1]['exit_s']:.3f} s, code {runs[-1]['exit_code']}, "
                  f"stream ended {runs[-1]['stream_ended']} (load {load_average()})", flush=True)
    times = [r["exit_s"] for r in runs]
    figures = {
        "runs": args.runs, "target_s": TARGET_S, "exit_s_median": median(times), "exit_s_min": min(times), "exit_s_max": max(times),
        "exit_codes": sorted({r["exit_code"] for r in runs}),
        "streams_ended": all(r["stream_ended"] for r in runs), "load_average": load_average(),
        "scenario": "idle daemon, two MCP clients holding GET streams and a leaked session (its GET stream held too)",
        "per_run": runs,
    }
    print_table(["SIGTERM → exit (s)", "median", "min", "max", "exit codes", "streams ended"],
                [["idle, 2 clients + leaked session", f"{figures['exit_s_median']:.3f}",
                  f"{figures['exit_s_min']:.3f}", f"{figures['exit_s_max']:.3f}",
                  figures["exit_codes"], figures["streams_ended"]]])
    print(f"machine: {machine()}; load {load_average()}")
    print(f"results: {write_results('shutdown', figures)}")


if __name__ == "__main__":
    main()

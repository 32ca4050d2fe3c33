"""Helpers the HTTPS benchmarks share: start the daemon (or the bare FastMCP floor) as a subprocess
on a free port with temp store and TLS dirs, read its CPU time and memory from /proc, connect
strict-TLS MCP clients."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _common import load_average  # noqa: F401 — re-exported; importing _common puts this checkout on sys.path
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from velesmem.daemon.tls import client_ssl_context, prepare_tls

START_DEADLINE_S = 120.0
SETTLE_POLL_S = 0.05  # how often curated() asks memory_status
BENCH_DIR = Path(__file__).resolve().parent
CHECKOUT = BENCH_DIR.parent


def free_port() -> int:
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


def memory_mib(pid: int) -> dict[str, float]:
    """Resident MiB of ``pid`` (Linux /proc): ``rss`` now, ``peak`` (its high-water mark), and
    now by kind: ``anon`` (the heap), ``file`` (mapped files: SQLite's mmap, libraries)."""
    fields = {"VmRSS:": "rss", "VmHWM:": "peak", "RssAnon:": "anon", "RssFile:": "file"}
    out = {name: float("nan") for name in fields.values()}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                key = line.split(None, 1)[0]
                if key in fields:
                    out[fields[key]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


@dataclass
class Served:
    """A server subprocess and how to reach it."""

    proc: subprocess.Popen[bytes]
    url: str  # the MCP endpoint
    base: str
    ca: Path
    log: Path
    started_s: float = 0.0  # spawn → /health answered

    @property
    def pid(self) -> int:
        return self.proc.pid

    def client(self) -> Client[Any]:
        return Client(StreamableHttpTransport(self.url, verify=client_ssl_context(self.ca)))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def daemon_env(root: Path, port: int, embedder: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env |= {"VELESDB_MEMORY_PATH": str(root / "store"), "VELESDB_MEMORY_TLS_DIR": str(root / "tls"),
            "VELESDB_MEMORY_HTTP_BIND": f"127.0.0.1:{port}", "HOME": str(root),
            "VELESDB_MEMORY_EMBEDDER": embedder,
            # the daemon runs this checkout's code, whatever velesmem the interpreter has installed
            "PYTHONPATH": os.pathsep.join([str(CHECKOUT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return env | (extra or {})


def _wait_health(proc: subprocess.Popen[bytes], base: str, ca: Path, log: Path, path: str) -> None:
    end = time.monotonic() + START_DEADLINE_S
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text(errors='replace')}")
        try:
            if ca.exists() and httpx.get(f"{base}{path}", verify=client_ssl_context(ca),
                                         timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > end:
            raise SystemExit(f"server did not answer {path} in time")
        time.sleep(0.02)


def start_daemon(root: Path, embedder: str = "hash", extra_env: dict[str, str] | None = None) -> Served:
    """``velesdb-memory --http`` on a free port, its store and TLS under ``root``; waits for /health."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = root / "daemon.log"
    t0 = time.perf_counter()
    # cwd: ``-m`` puts the working directory first on sys.path, ahead of PYTHONPATH
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], cwd=CHECKOUT,
                            env=daemon_env(root, port, embedder, extra_env), stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"https://127.0.0.1:{port}"
    ca = root / "tls" / "ca-cert.pem"
    _wait_health(proc, base, ca, log, "/health")
    return Served(proc, f"{base}/mcp", base, ca, log, time.perf_counter() - t0)


def start_bare(root: Path, defaults: bool = False, stack: tuple[str, str] = ("asyncio", "h11"),
               script: str = "_bare_fastmcp.py") -> Served:
    """A bare floor on a free port, TLS from a CA under ``root``: ``_bare_fastmcp.py`` (with the
    daemon's ``http_app`` options, or FastMCP's ``defaults``) or ``_bare_sdk.py`` (the MCP SDK's
    lowlevel server); on uvicorn's ``stack`` (event loop, HTTP protocol)."""
    root.mkdir(parents=True, exist_ok=True)
    files = prepare_tls(root / "bare-tls")
    port = free_port()
    log = root / f"{Path(script).stem}.log"
    proc = subprocess.Popen([sys.executable, str(BENCH_DIR / script), str(port),
                             str(files.leaf_cert), str(files.leaf_key), *(["--defaults"] if defaults else []),
                             "--loop", stack[0], "--http", stack[1]],
                            stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"https://127.0.0.1:{port}"
    _wait_health(proc, base, files.ca_cert, log, "/mcp")  # no /health there: any answer will do
    return Served(proc, f"{base}/mcp", base, files.ca_cert, log)


async def curated(served: Served) -> None:
    """Wait until the daemon has checked every remembered fact for duplicates and updates (its
    curation lane runs after the acknowledgement): ``memory_status`` drops ``uncurated``."""
    async with served.client() as client:
        while True:
            status = await client.call_tool("memory_status", {})
            if "uncurated" not in (status.structured_content or {}).get("memory", {}):
                return
            await asyncio.sleep(SETTLE_POLL_S)

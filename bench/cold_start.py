"""Cold start: from exec of the daemon to its first tool-call reply, and to the model being ready.

Four cases, ``--runs`` daemons each per first tool: the daemon served over HTTPS (``velesdb-memory
--http``, a strict-TLS client against its CA) or over stdio (``velesdb-memory`` owning the store, as
an agent starts it when no daemon runs), on a fresh HOME (new HOME, store and TLS dir each run: the
CA and leaf are generated too, and no user cache exists) or a warm HOME (one HOME reused: store,
TLS dir and user cache from the runs before). Each run times, from exec: the first reply to its
first tool call (``remember`` or ``recall``; writes never wait for the model, and a ``recall``
before it is ready answers from text search with a warning), the daemon's CPU until then, and the
model being ready (the first ``recall`` answered without a warning). The local model's int8 graph
is prepared first, as the installers do (``velesdb-memory prepare-model``); ``-X importtime`` of
one extra HTTPS run lists the heaviest imports until the first reply. Interleaved with the runs,
the floor: the bare MCP SDK server (``_bare_sdk.py``: one trivial tool, its TLS files made
beforehand) timed the same way from exec to its first ``remember`` reply, which is what importing
the SDK and serving on it costs here before any velesmem code. The client is imported before
any clock starts; the checkout is byte-compiled first, as pip does at install. Writes
bench/results/cold_start.json (rendered by bench/render.py).

Run: python3 bench/cold_start.py [--runs 5] [--embedder local]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import functools
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import machine, median, print_table, write_results
from _daemon import BENCH_DIR, CHECKOUT, Served, daemon_env, free_port, load_average, process_cpu_s
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from velesmem.daemon.tls import client_ssl_context, prepare_tls

DEADLINE_S = 120.0
POLL_S = 0.005
READY_POLL_S = 0.05
TOOLS = {"remember": {"fact": "cold start: the first fact of this run"},
         "recall": {"query": "first fact", "k": 5}}
CASES = [("http", "fresh"), ("http", "warm"), ("stdio", "fresh"), ("stdio", "warm")]

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _payload(result: Any) -> dict[str, Any]:
    return result.structured_content or {}


def _is_error(result: Any) -> bool:
    return bool(result.is_error)


async def _first_and_ready(call: Call, tool: str, t0: float, pid: Callable[[], int]) -> dict[str, float]:
    """The first reply to ``tool`` (seconds from t0, and the daemon's CPU then), then polls
    ``recall`` until it answers without a warning: the model (and index) ready."""
    result = await call(tool, TOOLS[tool])
    first = time.perf_counter() - t0
    cpu = process_cpu_s(pid())
    if _is_error(result):
        raise SystemExit(f"{tool} failed: {result}")
    while "warnings" in _payload(result) or tool != "recall":
        tool = "recall"
        if time.perf_counter() - t0 > DEADLINE_S:
            raise SystemExit(f"the model was not ready within {DEADLINE_S} s")
        await asyncio.sleep(READY_POLL_S)
        result = await call("recall", TOOLS["recall"])
    return {"first_s": first, "cpu_s": cpu, "ready_s": time.perf_counter() - t0}


def spawn_http(root: Path, port: int, embedder: str) -> tuple[subprocess.Popen[bytes], float]:
    """``velesdb-memory --http`` on ``port``, its HOME, store and TLS dir under ``root``; the
    process and the moment it was spawned."""
    with (root / "daemon.log").open("ab") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], cwd=CHECKOUT,
                                env=daemon_env(root, port, embedder), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return proc, t0


async def run_http(root: Path, proc: subprocess.Popen[bytes], t0: float, port: int,
                   tool: str) -> dict[str, float]:
    ca = root / "tls" / "ca-cert.pem"
    while True:  # until it listens
        if time.perf_counter() - t0 > DEADLINE_S or proc.poll() is not None:
            raise SystemExit(f"no daemon answer: {(root / 'daemon.log').read_text(errors='replace')}")
        if not ca.exists():
            await asyncio.sleep(POLL_S)
            continue
        client = Client(StreamableHttpTransport(f"https://127.0.0.1:{port}/mcp",
                                                verify=client_ssl_context(ca)))
        try:
            await client.__aenter__()
        except Exception:  # noqa: BLE001 — not listening yet
            await asyncio.sleep(POLL_S)
            continue
        try:
            call = functools.partial(client.call_tool, raise_on_error=False)
            return await _first_and_ready(call, tool, t0, lambda: proc.pid)
        finally:
            await client.__aexit__(None, None, None)


async def run_stdio(root: Path, embedder: str, tool: str) -> dict[str, float]:
    env = daemon_env(root, free_port(), embedder)
    env.pop("VELESDB_MEMORY_HTTP_BIND", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "velesmem"], env=env,
                                   cwd=str(CHECKOUT))
    with (root / "daemon.log").open("a") as log:
        t0 = time.perf_counter()
        async with stdio_client(params, errlog=log) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await _first_and_ready(session.call_tool, tool, t0, _stdio_pid(root))


def _stdio_pid(root: Path) -> Callable[[], int]:
    """The stdio daemon's pid: the one process whose HOME is ``root`` (the SDK does not expose it)."""
    def find() -> int:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if f"HOME={root}".encode() in environ.split(b"\0"):
                return int(entry.name)
        return -1
    return find


def one(case: tuple[str, str], tmp: Path, embedder: str, tool: str, index: int) -> dict[str, float]:
    mode, home = case
    root = tmp / f"{mode}-{home}" if home == "warm" else tmp / f"{mode}-fresh-{tool}-{index}"
    root.mkdir(parents=True, exist_ok=True)
    if mode == "stdio":
        return asyncio.run(run_stdio(root, embedder, tool))
    port = free_port()
    proc, t0 = spawn_http(root, port, embedder)
    try:
        return asyncio.run(run_http(root, proc, t0, port, tool))
    finally:
        Served(proc, "", f"https://127.0.0.1:{port}", root / "tls" / "ca-cert.pem", root / "daemon.log").stop()


async def _first_bare_reply(port: int, ca: Path, proc: subprocess.Popen[bytes], t0: float) -> dict[str, float]:
    while True:  # until it listens
        if time.perf_counter() - t0 > DEADLINE_S or proc.poll() is not None:
            raise SystemExit("no answer from the bare MCP SDK server")
        client = Client(StreamableHttpTransport(f"https://127.0.0.1:{port}/mcp", verify=client_ssl_context(ca)))
        try:
            await client.__aenter__()
        except Exception:  # noqa: BLE001 — not listening yet
            await asyncio.sleep(POLL_S)
            continue
        try:
            result = await client.call_tool("remember", TOOLS["remember"], raise_on_error=False)
            first, cpu = time.perf_counter() - t0, process_cpu_s(proc.pid)
            if _is_error(result):
                raise SystemExit(f"the bare server failed: {result}")
            return {"first_s": first, "cpu_s": cpu}
        finally:
            await client.__aexit__(None, None, None)


def floor(root: Path) -> dict[str, float]:
    """Exec of the bare MCP SDK server (its TLS files made first) to its first ``remember`` reply."""
    files = prepare_tls(root / "bare-tls")
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(BENCH_DIR / "_bare_sdk.py"), str(port), str(files.leaf_cert),
                             str(files.leaf_key)], cwd=CHECKOUT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        return asyncio.run(_first_bare_reply(port, files.ca_cert, proc, t0))
    finally:
        proc.terminate()
        proc.wait()


def heaviest_imports(root: Path, embedder: str, top: int = 15) -> list[tuple[str, float]]:
    """The daemon's slowest top-level imports until its first reply (-X importtime, HTTPS)."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"https://127.0.0.1:{port}"
    ca = root / "tls" / "ca-cert.pem"
    with (root / "daemon.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "velesmem", "--http"],
                                cwd=CHECKOUT, env=daemon_env(root, port, embedder), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    async def first() -> None:
        while True:
            try:
                if ca.exists():
                    async with Client(StreamableHttpTransport(f"{base}/mcp", verify=client_ssl_context(ca))) as client:
                        await client.call_tool("memory_status", {})
                        return
            except Exception:  # noqa: BLE001 — not listening yet
                pass
            await asyncio.sleep(POLL_S)

    try:
        asyncio.run(asyncio.wait_for(first(), DEADLINE_S))
    finally:
        Served(proc, "", base, ca, root / "daemon.log").stop()
    rows = []
    for line in (root / "daemon.log").read_text(errors="replace").splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(3)) <= 2:  # imported by our own code or the top level
            rows.append((m.group(4), int(m.group(2)) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def prepared_model(embedder: str) -> str:
    """Run ``prepare-model`` as the installers do (idempotent); the path it names."""
    if embedder != "local":
        return ""
    out = subprocess.run([sys.executable, "-m", "velesmem", "prepare-model"], cwd=CHECKOUT,
                         capture_output=True, text=True, check=True,
                         env=daemon_env(Path(tempfile.gettempdir()), 0, embedder))
    return out.stdout.strip()


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--cases", nargs="+", default=[" ".join(c) for c in CASES],
                        choices=[" ".join(c) for c in CASES], help="default: all four")
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    args = parser.parse_args()
    cases_run = [c for c in CASES if " ".join(c) in args.cases]
    compileall.compile_dir(CHECKOUT / "velesmem", quiet=1)  # as an installed daemon has it
    prepared = prepared_model(args.embedder)
    load_before = load_average()
    raw: dict[str, dict[str, list[dict[str, float]]]] = {}
    bare: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="velesmem-cold-") as tmp:
        for case in cases_run:  # the warm HOMEs get their first (fresh) start outside the figures
            if case[1] == "warm":
                one(case, Path(tmp), args.embedder, "remember", 0)
        for i in range(args.runs):  # interleaved, so a load spike hits every case alike
            for case in cases_run:
                for tool in args.tools:
                    row = one(case, Path(tmp), args.embedder, tool, i)
                    raw.setdefault(" ".join(case), {}).setdefault(tool, []).append(row)
                    print(case, tool, {k: round(v, 3) for k, v in row.items()}, file=sys.stderr, flush=True)
            bare.append(floor(Path(tmp) / f"bare-{i}"))
            print("bare MCP SDK", {k: round(v, 3) for k, v in bare[-1].items()}, file=sys.stderr, flush=True)
        imports = heaviest_imports(Path(tmp) / "imports", args.embedder)
    load_after = load_average()
    cases = {name: {tool: {key: spread([r[key] for r in rows]) for key in rows[0]}
                    for tool, rows in tools.items()} for name, tools in raw.items()}
    worst_first = max(f["first_s"]["median"] for tools in cases.values() for f in tools.values())
    worst_ready = max(f["ready_s"]["median"] for tools in cases.values() for f in tools.values())
    worst_cpu = max(f["cpu_s"]["median"] for tools in cases.values() for f in tools.values())
    bare_floor = {key: spread([r[key] for r in bare]) for key in bare[0]}
    print(f"\nCold start ({args.runs} runs per case and first tool, embedder {args.embedder}; "
          f"model prepared at {prepared or '-'})")
    print(f"machine: {machine()}; load average before: {load_before}; after: {load_after}\n")
    rows = []
    for name, tools in cases.items():
        for tool, f in tools.items():
            rows.append([name, tool, *(f"{f[k]['median']:.3f} ({f[k]['min']:.3f}-{f[k]['max']:.3f})"
                                       for k in ("first_s", "cpu_s", "ready_s"))])
    print_table(["daemon, HOME", "first call", "exec → first reply s", "daemon CPU until then s",
                 "exec → model ready s"], rows)
    print(f"\nworst median to the first reply: {worst_first:.3f} s (target <= 1.0 s); "
          f"to the model ready: {worst_ready:.3f} s")
    print(f"the bare MCP SDK server (the floor): {bare_floor['first_s']['median']:.3f} s to its first "
          f"reply, {bare_floor['cpu_s']['median']:.3f} s CPU")
    print("\nheaviest imports until the first reply (cumulative s, -X importtime, one HTTPS run):")
    for name, seconds in imports:
        print(f"  {seconds:6.3f}  {name}")
    path = write_results("cold_start", {
        "runs": args.runs, "embedder": args.embedder, "prepared": prepared, "cases": cases,
        "raw": raw, "imports": imports, "load_before": load_before, "load_after": load_after,
        "bare_sdk": bare_floor, "bare_sdk_raw": bare,
        "summary": {"first_reply_s": worst_first, "first_reply_cpu_s": worst_cpu,
                    "model_ready_s": worst_ready}})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    os.environ.pop("PYTHONWARNINGS", None)
    main()

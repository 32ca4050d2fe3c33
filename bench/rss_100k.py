"""Peak RSS of the HTTPS daemon serving a 100k-fact store with the local model, and recall@10 of
the FAISS index (8-bit HNSW, candidates rescored exactly) against exact search on the same store.

Embedding 100k texts with the local model takes many minutes on 2 cores, so the store is built
in-process once with precomputed vectors under the local model's identity (``local:`` model name,
384 dimensions): clustered unit vectors (``TOPICS`` centres, noise per fact), as real notes
cluster. It is cached under ``--cache`` (default /tmp), one cache per index file format, and
copied for each daemon run. Then:

1. recall@10 vs exact, in process: ``--queries`` vector-mode recalls of perturbed cluster vectors
   against numpy's exact top 10 over every stored vector (ties at the 10th score all count);
2. the daemon (``velesdb-memory --http``, embedder ``local``, the real model) opens a copy of the
   store, answers ``--calls`` recalls and ``--calls`` remembers over strict TLS; its peak RSS
   (VmHWM) is read from /proc, with the RSS by kind after the calls.

Target (issue 25): peak RSS <= 300 MiB at 100k facts with the local model; recall@10 >= 0.95.

Run: python3 bench/rss_100k.py [--facts 100000] [--queries 200] [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import load_average, machine, print_table, write_results
from _daemon import memory_mib, start_daemon

import velesmem
from velesmem.config import Settings
from velesmem.embed.local import LOCAL_DIMENSION, LOCAL_MODEL
from velesmem.store.sqlite.vector_index import FORMAT

SEED = 20261205
TOPICS = 500
NOISE = 0.9  # per-fact noise against a unit centre: neighbours overlap, as real embeddings do
TARGET_MIB = 300.0
TARGET_RECALL = 0.95
BUILD_CALLERS = 8


def fact_vectors(n: int) -> np.ndarray:
    """The n stored unit vectors: a topic centre plus Gaussian noise, normalised."""
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((TOPICS, LOCAL_DIMENSION)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topics = rng.integers(0, TOPICS, n)
    noise = rng.standard_normal((n, LOCAL_DIMENSION)).astype(np.float32)
    noise *= NOISE / np.sqrt(LOCAL_DIMENSION)
    vectors = centres[topics] + noise
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def query_vectors(facts: np.ndarray, count: int) -> np.ndarray:
    """Queries near stored facts: a fact's vector, perturbed, normalised."""
    rng = np.random.default_rng(SEED + 1)
    picks = facts[rng.integers(0, len(facts), count)]
    noisy = picks + rng.standard_normal(picks.shape).astype(np.float32) * (0.5 / np.sqrt(LOCAL_DIMENSION))
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


class Precomputed:
    """An embedder with the local model's identity whose vectors are looked up, not computed:
    ``note <i>`` → fact vector i, ``query <j>`` → query vector j."""

    model = LOCAL_MODEL
    semantic = True
    inline = True
    dimension = LOCAL_DIMENSION
    ready = True

    def __init__(self, facts: np.ndarray, queries: np.ndarray) -> None:
        self.facts, self.queries = facts, queries

    def warm(self) -> None:
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            kind, number = text.split()[:2]
            rows.append((self.facts if kind == "note" else self.queries)[int(number)])
        return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, LOCAL_DIMENSION), np.float32)


def fact_text(i: int) -> str:
    return f"note {i} topic words t{i % 97} s{i % 89}"


def build(store: Path, facts: np.ndarray, queries: np.ndarray) -> float:
    """Remember every fact into a fresh store at ``store``; seconds taken."""
    settings = Settings(path=store, embedder="local", autograph="off")
    t0 = time.perf_counter()
    with velesmem.open(store, settings=settings, embedder=Precomputed(facts, queries)) as runtime:
        svc = runtime.memory
        errors: list[BaseException] = []

        def work(part: range) -> None:
            try:
                for i in part:
                    svc.remember(fact_text(i))
            except BaseException as exc:  # noqa: BLE001 — surfaced after join
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(range(c, len(facts), BUILD_CALLERS),))
                   for c in range(BUILD_CALLERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    return time.perf_counter() - t0


def recall_at_10(store: Path, facts: np.ndarray, queries: np.ndarray) -> float:
    """Share of the engine's vector top 10 that is in the exact top 10 (ties included)."""
    settings = Settings(path=store, embedder="local", autograph="off", recall_mode="vector")
    hits = 0
    with velesmem.open(store, settings=settings, embedder=Precomputed(facts, queries)) as runtime:
        svc = runtime.memory
        for j, q in enumerate(queries):
            sims = facts @ q
            tenth = np.sort(sims)[-10]
            acceptable = {fact_text(int(i)) for i in np.nonzero(sims >= tenth - 1e-6)[0]}
            got = [m.content for m in svc.recall(f"query {j}", k=10).memories]
            hits += sum(1 for c in got if c in acceptable)
    return hits / (10 * len(queries))


async def serve_calls(root: Path, store: Path, calls: int) -> dict[str, Any]:
    """The daemon with the local model on a copy of ``store``: peak RSS after recalls + remembers."""
    run_root = root / "daemon"
    shutil.copytree(store, run_root / "store")
    served = start_daemon(run_root, "local", {"VELESDB_MEMORY_AUTOGRAPH": "off"})
    try:
        opened = memory_mib(served.pid)
        rng = random.Random(SEED)
        async with served.client() as client:
            for _ in range(calls):
                result = await client.call_tool("recall", {"query": f"topic words t{rng.randrange(97)}", "k": 10})
                if result.is_error:
                    raise SystemExit(f"recall failed: {result.content}")
            for i in range(calls):
                result = await client.call_tool("remember", {"fact": f"a new note number {i} about t{i}"})
                if result.is_error:
                    raise SystemExit(f"remember failed: {result.content}")
        after = memory_mib(served.pid)
    finally:
        served.stop()
    return {"started_s": round(served.started_s, 2), "rss_at_health_mib": round(opened["rss"], 1),
            "rss_mib": round(after["rss"], 1), "anon_mib": round(after["anon"], 1),
            "file_mib": round(after["file"], 1), "peak_rss_mib": round(after["peak"], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    facts = fact_vectors(args.facts)
    queries = query_vectors(facts, args.queries)
    cached = args.cache / f"velesmem-rss-{args.facts}-{SEED}-f{FORMAT}"
    built_s = None
    if not (cached / "done").exists():
        shutil.rmtree(cached, ignore_errors=True)
        built_s = round(build(cached / "store", facts, queries), 1)
        (cached / "done").write_text("ok")
        print(f"built {args.facts} facts in {built_s} s", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="velesmem-rss-") as tmp:
        work = Path(tmp) / "recall-store"
        shutil.copytree(cached / "store", work)
        recall = recall_at_10(work, facts, queries)
        print(f"recall@10 {recall:.3f}", file=sys.stderr, flush=True)
        served = asyncio.run(serve_calls(Path(tmp), cached / "store", args.calls))
    row = {"facts": args.facts, "recall_at_10": round(recall, 4), **served, "load": load_average()}
    keys = list(row)
    print_table(keys, [[row[k] for k in keys]])
    print(f"\npeak RSS target <= {TARGET_MIB:.0f} MiB: {'met' if row['peak_rss_mib'] <= TARGET_MIB else 'missed'}; "
          f"recall@10 target >= {TARGET_RECALL}: {'met' if recall >= TARGET_RECALL else 'missed'}")
    print(f"command: python3 bench/rss_100k.py --facts {args.facts} --queries {args.queries} "
          f"--calls {args.calls}\nmachine: {machine()}")
    path = write_results("rss_100k", {"rows": [row], "built_s": built_s, "queries": args.queries,
                                      "calls": args.calls})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

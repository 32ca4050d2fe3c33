"""Engine throughput and latency with the hash embedder, against an exact baseline.

Prints, for each corpus size (default 10k and 100k facts):
- remember throughput (facts/s) from 1 caller and from 8 concurrent callers;
- recall latency p50/p99 (one query at a time) in vector mode and in hybrid mode;
- the same for a brute-force baseline (numpy exact cosine over every vector, same run);
- recall@10 of the engine's vector ranking against the exact top 10.

Targets (issue 2): recall p50 ≤ 2 ms at 100k with recall@10 ≥ 0.95; remember ≥ 1,000 facts/s
from 8 concurrent callers.

The embedder is always ``hash`` (a new store would otherwise get ``local`` when the ``embed``
extra is installed). ``--autograph`` says what builds the entity graph from each remember:
``identifiers`` (the default a user gets) or ``off``; the line under the table names it. The
graph is built in the background after each acknowledgement: recall is timed once it has caught
up, and "graph + curation caught up s" says how long after the last remember that took (the autograph and
the curation lane, which checks each acknowledged fact for duplicates and updates). Callers
remember as the daemon does: acknowledged once the fact is durable (``submit_remember``), the
checks following in the lane.

Run: python3 bench/engine.py [--sizes 10000 100000] [--queries 300] [--autograph identifiers|off]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import load_average, machine, median, percentile, print_table, write_results

import velesmem
from velesmem.config import Settings
from velesmem.memory.service import MemoryService

SEED = 20261130
AUTOGRAPH_CATCH_UP_S = 600.0
TOPICS = 400  # facts cluster around topics, as real notes do; pure noise makes ANN meaningless
WORDS_PER_TOPIC = 12
VOCAB = 6000


def make_corpus(n: int, rng: random.Random) -> list[str]:
    """n distinct facts: a topic's words mixed with common words, plus a serial number."""
    vocab = [f"w{i}" for i in range(VOCAB)]
    topics = [rng.sample(vocab, WORDS_PER_TOPIC) for _ in range(TOPICS)]
    facts = []
    for i in range(n):
        topic = topics[rng.randrange(TOPICS)]
        words = rng.sample(topic, 5) + rng.sample(vocab, 3)
        facts.append(" ".join(words) + f" note {i}")
    return facts


def make_queries(count: int, facts: list[str], rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(rng.choice(facts).split()[:8], 4)) for _ in range(count)]


def remember_all(svc: MemoryService, facts: list[str], callers: int) -> float:
    """Remember facts from `callers` threads; return facts per second."""
    chunks = [facts[i::callers] for i in range(callers)]
    errors: list[BaseException] = []

    def work(chunk: list[str]) -> None:
        try:
            for fact in chunk:
                svc.submit_remember(fact).result()
        except BaseException as exc:  # noqa: BLE001 — surfaced after join
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in chunks]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return len(facts) / elapsed


def time_calls(fn, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - start) * 1000)
    return out


def bench_size(n: int, queries_count: int, rng: random.Random, autograph: str) -> dict:
    facts = make_corpus(n, rng)
    queries = make_queries(queries_count, facts, rng)
    single_n = min(2000, n // 5)
    row: dict = {"facts": n}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(path=Path(tmp), recall_mode="vector", embedder="hash", autograph=autograph)
        with velesmem.open(Path(tmp), settings=settings) as runtime:
            svc = runtime.memory
            row["remember_1_caller_per_s"] = remember_all(svc, facts[:single_n], 1)
            row["remember_8_callers_per_s"] = remember_all(svc, facts[single_n:], 8)
            # autograph links acknowledged facts in the background: time recall once it caught up
            start = time.perf_counter()
            if not runtime.autograph.wait_idle(AUTOGRAPH_CATCH_UP_S):
                raise SystemExit(f"autograph still busy {AUTOGRAPH_CATCH_UP_S:.0f} s after the last remember")
            if not svc.settle(AUTOGRAPH_CATCH_UP_S):
                raise SystemExit(f"curation still busy {AUTOGRAPH_CATCH_UP_S:.0f} s after the last remember")
            row["graph_catch_up_s"] = round(time.perf_counter() - start, 2)
            embedder = svc.embedder
            matrix = np.vstack([embedder.embed(facts[i:i + 4096]) for i in range(0, n, 4096)])
            qvecs = embedder.embed(queries)
            for q in queries[:20]:  # warm caches and the index
                svc.recall(q, k=10)
            vector_ms = time_calls(lambda q: svc.recall(q, k=10), queries)

            def exact(q: str) -> np.ndarray:
                sims = matrix @ embedder.embed([q])[0]
                return np.argpartition(-sims, 10)[:10]

            exact_ms = time_calls(exact, queries)
            hits = 0
            for q, qv in zip(queries, qvecs):
                sims = matrix @ qv
                top = np.argsort(-sims, kind="stable")[:10]
                threshold = sims[top[-1]]
                # ties at the 10th similarity are all acceptable answers
                acceptable = {facts[i] for i in np.nonzero(sims >= threshold - 1e-6)[0]}
                got = [m.content for m in svc.recall(q, k=10).memories]
                hits += sum(1 for c in got if c in acceptable)
            row["recall_at_10"] = hits / (10 * len(queries))
        hybrid = Settings(path=Path(tmp), recall_mode="hybrid", embedder="hash", autograph=autograph)
        with velesmem.open(Path(tmp), settings=hybrid).memory as svc:
            for q in queries[:20]:
                svc.recall(q, k=10)
            hybrid_ms = time_calls(lambda q: svc.recall(q, k=10), queries)
    row.update({
        "vector_p50_ms": median(vector_ms), "vector_p99_ms": percentile(vector_ms, 99),
        "hybrid_p50_ms": median(hybrid_ms), "hybrid_p99_ms": percentile(hybrid_ms, 99),
        "exact_p50_ms": median(exact_ms), "exact_p99_ms": percentile(exact_ms, 99),
    })
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--autograph", choices=["identifiers", "off"], default="identifiers")
    args = parser.parse_args()
    load_before = load_average()
    rng = random.Random(SEED)
    rows = []
    for n in args.sizes:
        print(f"… {n} facts", flush=True)
        rows.append(bench_size(n, args.queries, rng, args.autograph))
    print_table(
        ["facts", "remember 1 caller/s", "remember 8 callers/s", "recall vector p50/p99 ms",
         "recall hybrid p50/p99 ms", "exact baseline p50/p99 ms", "p50 ratio exact/vector",
         "recall@10 vs exact", "graph + curation caught up s"],
        [[r["facts"], f"{r['remember_1_caller_per_s']:.0f}", f"{r['remember_8_callers_per_s']:.0f}",
          f"{r['vector_p50_ms']:.2f} / {r['vector_p99_ms']:.2f}",
          f"{r['hybrid_p50_ms']:.2f} / {r['hybrid_p99_ms']:.2f}",
          f"{r['exact_p50_ms']:.2f} / {r['exact_p99_ms']:.2f}",
          f"{r['exact_p50_ms'] / r['vector_p50_ms']:.1f}x", f"{r['recall_at_10']:.3f}",
          r["graph_catch_up_s"]]
         for r in rows])
    print(f"\nhash embedder, autograph {args.autograph}; load average before: {load_before}; "
          f"after: {load_average()}")
    print(f"reproduce: python3 bench/engine.py --sizes {' '.join(map(str, args.sizes))} "
          f"--queries {args.queries} --autograph {args.autograph}\nmachine: {machine()}")
    print(f"results: {write_results('engine', {'rows': rows, 'autograph': args.autograph})}")


if __name__ == "__main__":
    main()

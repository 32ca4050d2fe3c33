"""Filtered recall latency at scale: exact-match filters and recall_where range predicates.

Stores n facts (the engine benchmark's corpus, default 100k) with metadata
``{"b": i % 100, "g": "g<i % 10>", "h": i % 2 == 0}`` — an integer, a string and a boolean —
then times, one query at a time in the default (hybrid) mode, recall with an exact filter and
recall_where with a range predicate at 1 %, 10 % and 50 % selectivity, and prints p50/p99 (hash
embedder).
Every result is checked to match its filter.

Run: python3 bench/filtered.py [--facts 100000] [--queries 100] [--label before]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from pathlib import Path

from _common import machine, median, percentile, print_table, write_results
from engine import SEED, make_corpus, make_queries

import velesmem
from velesmem.config import Settings
from velesmem.memory.service import MemoryService

CALLERS = 8


def metadata(i: int) -> dict:
    return {"b": i % 100, "g": f"g{i % 10}", "h": i % 2 == 0}


# (selectivity, kind, argument, check on a result's metadata)
CASES = [
    ("1%", "filter", {"b": 7}, lambda m: m.get("b") == 7),
    ("10%", "filter", {"g": "g3"}, lambda m: m.get("g") == "g3"),
    ("50%", "filter", {"h": True}, lambda m: m.get("h") is True),
    ("1%", "where", [{"field": "b", "op": "lt", "value": 1}], lambda m: m.get("b") < 1),
    ("10%", "where", [{"field": "b", "op": "ge", "value": 90}], lambda m: m.get("b") >= 90),
    ("50%", "where", [{"field": "b", "op": "lt", "value": 50}], lambda m: m.get("b") < 50),
]


def fill(svc: MemoryService, facts: list[str]) -> float:
    """Remember every fact with its metadata from CALLERS threads; return facts per second."""
    errors: list[BaseException] = []

    def work(start: int) -> None:
        try:
            for i in range(start, len(facts), CALLERS):
                svc.remember(facts[i], metadata=metadata(i))
        except BaseException as exc:  # noqa: BLE001 — surfaced after join
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in range(CALLERS)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return len(facts) / (time.perf_counter() - began)


def run_case(svc: MemoryService, kind: str, arg, check, queries: list[str]) -> list[float]:
    def call(q: str):
        if kind == "filter":
            return svc.recall(q, k=10, filter=arg)
        return svc.recall_where(q, arg, k=10)

    for q in queries[:10]:  # warm caches
        call(q)
    out = []
    for q in queries:
        began = time.perf_counter()
        result = call(q)
        out.append((time.perf_counter() - began) * 1000)
        assert result.memories, (kind, arg, q)
        assert all(check(m.metadata) for m in result.memories), (kind, arg, q)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--label", default="", help="suffix for the results file")
    args = parser.parse_args()
    rng = random.Random(SEED)
    facts = make_corpus(args.facts, rng)
    queries = make_queries(args.queries, facts, rng)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"… storing {args.facts} facts", flush=True)
        with velesmem.open(Path(tmp), settings=Settings(path=Path(tmp), embedder="hash")).memory as svc:
            per_s = fill(svc, facts)
        # reopened: the figures are for a store as a restarted daemon finds it
        with velesmem.open(Path(tmp), settings=Settings(path=Path(tmp), embedder="hash")).memory as svc:
            for selectivity, kind, arg, check in CASES:
                ms = run_case(svc, kind, arg, check, queries)
                rows.append({"selectivity": selectivity, "kind": kind, "arg": arg,
                             "p50_ms": median(ms), "p99_ms": percentile(ms, 99)})
    print_table(["selectivity", "call", "filter", "p50 ms", "p99 ms"],
                [[r["selectivity"], "recall" if r["kind"] == "filter" else "recall_where",
                  str(r["arg"]), f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}"] for r in rows])
    label = f" --label {args.label}" if args.label else ""
    print(f"\n{args.facts} facts stored at {per_s:.0f} facts/s ({CALLERS} callers), "
          f"{args.queries} queries per row, hybrid mode")
    print(f"reproduce: python3 bench/filtered.py --facts {args.facts} --queries {args.queries}"
          f"{label}\nmachine: {machine()}")
    name = f"filtered-{args.label}" if args.label else "filtered"
    print(f"results: {write_results(name, {'facts': args.facts, 'rows': rows})}")


if __name__ == "__main__":
    main()

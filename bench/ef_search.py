"""How wide a graph search must look (efSearch), chosen on tuning sets no target reports on.

The vector index finds candidates with 8-bit codes and rescores at least ``RESCORE_CANDIDATES``
of them exactly, so it may walk a narrower beam than the float16 index it replaced (which kept
only the n it returned). This script builds the real ``VectorIndex`` over two tuning sets and
sweeps efSearch:

* ``words``: ``bench/engine.py``'s corpus and queries drawn with another seed (100k facts, the
  hash embedder);
* ``clusters``: clustered unit vectors of the local model's dimension, like
  ``bench/rss_100k.py``'s but with another seed, more topics and more noise.

Beside each set it measures the float16 index's configuration (efSearch 160, its top n rescored
exactly) for reference. The chosen efSearch is the smallest of the grid whose recall@10 against
exact search (ties at the 10th score counted) is within ``TOLERANCE`` of the 8-bit index's at
efSearch 160 (what it searched with before) on every tuning set. The sets the targets report on (``bench/engine.py`` seed 20261130,
``bench/rss_100k.py`` seed 20261205) are not used here.

Run: python3 bench/ef_search.py [--facts 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import faiss
import numpy as np
from _common import load_average, print_table, write_results
from engine import make_corpus, make_queries

from velesmem.embed.hashing import HashEmbedder
from velesmem.embed.local import LOCAL_DIMENSION
from velesmem.store.sqlite import vector_index as vi
from velesmem.store.sqlite.vector_index import VectorIndex

WORDS_SEED = 7  # bench/engine.py draws with 20261130
CLUSTERS_SEED = 11  # bench/rss_100k.py draws with 20261205
CLUSTER_TOPICS = 800
CLUSTER_NOISE = 1.0
GRID = (48, 64, 80, 96, 104, 112, 120, 128, 144, 160)
REFERENCE_EF = 160
BASELINE_EF = 160  # the 8-bit index's efSearch before this sweep chose one
TOLERANCE = 0.005  # recall@10 a narrower search may lose against BASELINE_EF
K = 10
BUILD_CHUNK = 4096


def words_set(n: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = random.Random(WORDS_SEED)
    facts = make_corpus(n, rng)
    asked = make_queries(queries, facts, rng)
    embedder = HashEmbedder()
    matrix = np.vstack([embedder.embed(facts[i:i + BUILD_CHUNK]) for i in range(0, n, BUILD_CHUNK)])
    return matrix.astype(np.float32), embedder.embed(asked).astype(np.float32)


def clusters_set(n: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(CLUSTERS_SEED)
    d = LOCAL_DIMENSION
    centres = rng.standard_normal((CLUSTER_TOPICS, d)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((n, d)).astype(np.float32) * (CLUSTER_NOISE / np.sqrt(d))
    facts = centres[rng.integers(0, CLUSTER_TOPICS, n)] + noise
    facts /= np.linalg.norm(facts, axis=1, keepdims=True)
    picks = facts[rng.integers(0, n, queries)]
    asked = picks + rng.standard_normal(picks.shape).astype(np.float32) * (0.5 / np.sqrt(d))
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    return facts.astype(np.float32), asked.astype(np.float32)


def acceptable(facts: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """Per query, every row whose exact score reaches the 10th best (ties count as hits)."""
    out = []
    for q in queries:
        sims = facts @ q
        tenth = np.partition(sims, len(sims) - K)[len(sims) - K]
        out.append(set(np.flatnonzero(sims >= tenth - 1e-6).tolist()))
    return out


def measure(search: Callable[[np.ndarray], list[int]], queries: np.ndarray,
            truth: list[set[int]]) -> tuple[int, float]:
    """(hits among the top 10 of every query, median ms per search)."""
    hits, times = 0, []
    for q, ok in zip(queries, truth):
        start = time.perf_counter()
        got = search(q)
        times.append((time.perf_counter() - start) * 1000)
        hits += len(set(got) & ok)
    return hits, statistics.median(times)


def velesmem_index(facts: np.ndarray) -> VectorIndex:
    index = VectorIndex(facts.shape[1])  # no indexer running: adds go straight into HNSW
    for start in range(0, len(facts), BUILD_CHUNK):
        rows = np.arange(start, min(start + BUILD_CHUNK, len(facts)), dtype=np.int64)
        index.add(rows, facts[rows])
    return index


def float16_reference(facts: np.ndarray) -> Callable[[np.ndarray], list[int]]:
    """The float16 index's search: its top n at efSearch 160, rescored exactly."""
    hnsw = faiss.IndexHNSWSQ(facts.shape[1], faiss.ScalarQuantizer.QT_fp16, vi.HNSW_M,
                             faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = vi.HNSW_EF_CONSTRUCTION
    hnsw.train(facts[:BUILD_CHUNK])
    hnsw.add(facts)
    params = faiss.SearchParametersHNSW(efSearch=REFERENCE_EF)

    def search(q: np.ndarray) -> list[int]:
        _, labels = hnsw.search(q.reshape(1, -1), K, params=params)
        rows = labels[0][labels[0] >= 0]
        return rows[np.argsort(-(facts[rows] @ q), kind="stable")].tolist()
    return search


def sweep(name: str, facts: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    truth = acceptable(facts, queries)
    index = velesmem_index(facts)
    reference = measure(float16_reference(facts), queries, truth)
    rows = []
    for ef in GRID:
        vi.HNSW_EF_SEARCH = ef  # the module's tunable, read at each search
        hits, p50 = measure(lambda q: [i for i, _ in index.search(q, K)], queries, truth)
        rows.append({"ef_search": ef, "hits": hits, "recall_at_10": round(hits / (K * len(queries)), 4),
                     "p50_ms": round(p50, 3)})
    return {"set": name, "facts": len(facts), "queries": len(queries),
            "reference": {"ef_search": REFERENCE_EF, "hits": reference[0],
                          "recall_at_10": round(reference[0] / (K * len(queries)), 4),
                          "p50_ms": round(reference[1], 3)},
            "sweep": rows}


def _close_enough(result: dict[str, Any], ef: int) -> bool:
    """Whether efSearch ``ef`` found at most TOLERANCE x 10 x queries fewer of the exact top 10
    than BASELINE_EF (counted in hits, so the choice does not hang on rounding)."""
    hits = {r["ef_search"]: int(r["hits"]) for r in result["sweep"]}
    return hits[ef] >= hits[BASELINE_EF] - round(TOLERANCE * K * int(result["queries"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    vi.single_thread()
    default = vi.HNSW_EF_SEARCH
    sets = [sweep("words", *words_set(args.facts, args.queries)),
            sweep("clusters", *clusters_set(args.facts, args.queries))]
    vi.HNSW_EF_SEARCH = default
    chosen = next(ef for ef in GRID if all(_close_enough(s, ef) for s in sets))
    table = []
    for s in sets:
        ref = s["reference"]
        table.append([s["set"], "float16, top n", ref["ef_search"], ref["recall_at_10"], ref["p50_ms"]])
        table += [[s["set"], "8-bit, rescored", r["ef_search"], r["recall_at_10"], r["p50_ms"]]
                  for r in s["sweep"]]
    print_table(["set", "index", "efSearch", "recall@10", "p50 ms"], table)
    print(f"chosen efSearch: {chosen} (in use: {default})")
    write_results("ef_search", {"sets": sets, "chosen_ef_search": chosen, "in_use": default,
                                "baseline_ef_search": BASELINE_EF, "tolerance": TOLERANCE,
                                "rescore_candidates": vi.RESCORE_CANDIDATES,
                                "load": load_average()})


if __name__ == "__main__":
    main()

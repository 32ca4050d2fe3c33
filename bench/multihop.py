"""Controlled multi-hop benchmark: does the graph reach evidence that shares no words?

Rebuilds the reference's bench_multihop: 24 chains decision → PR → problem. Each question
"why did we adopt <tech>" has a 1-hop answer (the decision, which shares words with it) and a
2-hop answer (the original problem, which shares none). Two ways of linking a chain:

- ``relate``: the agent wired decision → PR → problem by hand (autograph off);
- ``identifiers``: nobody called relate; the decision names the PR ("see PR #101"), the PR
  names the ticket it fixes ("fixes EPIC-317"), and the offline autograph connects them through
  the hubs of those identifiers.

The same embedder is used throughout and only the graph is toggled:

- direct:                 the decision is in recall's top k
- multi-hop, vector-only: the problem is in recall's top k with VELESDB_MEMORY_RECALL_MODE=vector
- multi-hop, vector+graph: the problem is in recall_fused's top k (same vector-only ranking,
  plus the graph walk from the top hit)

Run: python3 bench/multihop.py [--k 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import machine, print_table, write_results

import velesmem
from velesmem.config import Settings
from velesmem.memory.service import MemoryService

# (technology, what it replaced, the original problem — no word shared with the question)
CHAINS: list[tuple[str, str, str]] = [
    ("parking_lot", "std mutex", "EPIC-317: intermittent CI hang under load"),
    ("tokio", "async-std", "INC-88: sockets starve when thousands of peers connect"),
    ("serde", "handwritten parsers", "BUG-412: config files silently lose nested keys"),
    ("postgres", "mysql", "OPS-19: nightly reports disagree with ledger totals"),
    ("redis", "memcached", "INC-203: session eviction logs users out mid-checkout"),
    ("kafka", "rabbitmq", "EPIC-77: replaying yesterday's orders is impossible"),
    ("grpc", "rest endpoints", "PERF-51: mobile clients burn battery on chatty polling"),
    ("terraform", "bash scripts", "OPS-402: staging drifted from production twice"),
    ("kubernetes", "systemd units", "INC-9: deploys take the storefront offline"),
    ("prometheus", "statsd", "OPS-66: alerts fire hours after outages begin"),
    ("opentelemetry", "custom tracing", "EPIC-140: nobody can follow a request across services"),
    ("rust", "cpython extensions", "BUG-900: segfaults crash workers every weekend"),
    ("typescript", "plain javascript", "BUG-311: undefined is not a function in billing"),
    ("react", "jquery", "EPIC-58: every form behaves differently on mobile"),
    ("vite", "webpack", "DX-12: frontend rebuilds take ninety seconds"),
    ("pnpm", "npm", "DX-40: ci disk fills with duplicate node packages"),
    ("ruff", "flake8", "DX-77: lint step dominates pipeline minutes"),
    ("pytest", "unittest", "DX-90: fixtures are copied between hundreds of files"),
    ("sqlite", "json files", "BUG-5: concurrent saves corrupt the settings"),
    ("faiss", "linear scans", "PERF-3: similarity lookups stall past ten thousand rows"),
    ("argon2", "md5 hashing", "SEC-21: leaked digests cracked within minutes"),
    ("wireguard", "openvpn", "OPS-33: remote engineers drop off calls hourly"),
    ("zstd", "gzip", "PERF-88: backups overrun their nightly window"),
    ("nix", "docker images", "DX-150: laptops build different binaries than servers"),
]


def question(tech: str) -> str:
    return f"why did we adopt {tech}"


def decision_text(tech: str, old: str) -> str:
    """The decision: shares only the technology's name with its question, nothing with others."""
    return f"adopted {tech} to replace {old}"


def ticket(problem: str) -> str:
    return problem.split(":", 1)[0]


def load_store(path: Path, settings: Settings, linking: str) -> tuple[MemoryService, list[str]]:
    """Store every chain, linked by ``relate`` (decision → PR → problem) or only by the
    identifiers their texts share; return the service and each chain's decision text."""
    runtime = velesmem.open(path, settings=settings)
    svc = runtime.memory
    decisions = []
    for n, (tech, old, problem) in enumerate(CHAINS, start=1):
        pr = f"PR #{100 + n}"
        if linking == "relate":
            problem_id = svc.remember(problem).id
            pr_id = svc.remember(f"{pr} swaps {old} for {tech}",
                                 links=[{"target": problem_id, "relation": "fixes"}]).id
            decision = decision_text(tech, old)
            svc.remember(decision, links=[{"target": pr_id, "relation": "implemented_in"}])
        else:
            svc.remember(problem)
            svc.remember(f"{pr} swaps {old} for {tech}, fixes {ticket(problem)}")
            decision = f"{decision_text(tech, old)}, see {pr}"
            svc.remember(decision)
        decisions.append(decision)
    if linking == "identifiers":
        assert runtime.autograph.wait_idle(120)
    return svc, decisions


def run(k: int, linking: str) -> dict[str, float]:
    hits = {"direct": 0, "multihop_vector_only": 0, "multihop_vector_graph": 0}
    with tempfile.TemporaryDirectory() as tmp:
        autograph = "identifiers" if linking == "identifiers" else "off"
        settings = Settings(path=Path(tmp), recall_mode="vector", autograph=autograph)
        svc, decisions = load_store(Path(tmp), settings, linking)
        with svc:
            for (tech, _old, problem), decision in zip(CHAINS, decisions):
                q = question(tech)
                plain = [m.content for m in svc.recall(q, k=k).memories]
                fused = [m.content for m in svc.recall_fused(q, k=k, hops=2).memories]
                hits["direct"] += decision in plain
                hits["multihop_vector_only"] += problem in plain
                hits["multihop_vector_graph"] += problem in fused
    return {name: count / len(CHAINS) for name, count in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5, help="top-k counted as a hit (default 5)")
    args = parser.parse_args()
    rates = {linking: run(args.k, linking) for linking in ("relate", "identifiers")}
    print(f"multi-hop benchmark: {len(CHAINS)} decision → PR → problem chains, hash embedder, "
          f"hit@{args.k}")
    print_table(["links", "direct recall", "multi-hop, vector-only", "multi-hop, vector + graph"],
                [[linking, f"{r['direct']:.0%}", f"{r['multihop_vector_only']:.0%}",
                  f"{r['multihop_vector_graph']:.0%}"] for linking, r in rates.items()])
    print(f"\nreproduce: python3 bench/multihop.py --k {args.k}\nmachine: {machine()}")
    print(f"results: {write_results('multihop', {'k': args.k, 'hit_rates': rates})}")


if __name__ == "__main__":
    main()

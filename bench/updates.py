"""Updates win: how often the newest version of a fact is recalled first for its question.

bench/data/updates.jsonl holds (old, new, question) triples of project facts where one value
changes (numbers, dates, names, negation). Every old fact is remembered, then 30 days later
every new one, all in one store; each question is recalled and counts when its new fact comes
first. Supersede detection's subject-overlap threshold is tuned on the even-numbered triples
and the figure reported on the odd-numbered ones; ``off`` is the ranking without detection.
Also counted: supersedes edges linking facts of two different triples (wrong links).

    python3 bench/updates.py [--embedder hash] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _common import embedder_overrides, print_table, write_results

import velesmem
from velesmem import limits
from velesmem.config import Settings
from velesmem.memory.supersede import SUPERSEDES

DATA = Path(__file__).resolve().parent / "data" / "updates.jsonl"
START = 1_760_000_000.0
DAY = 86_400.0
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
OFF = 2.0  # an overlap no pair reaches: detection off


class _Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def run(triples: list[dict[str, Any]], threshold: float, settings: Settings) -> dict[str, Any]:
    """Newest-first rate per half and wrong links, for one threshold, on a fresh store."""
    limits.SUPERSEDE_SUBJECT_OVERLAP = threshold
    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp, \
            velesmem.open(Path(tmp) / "store", clock=clock, settings=settings).memory as mem:
        owner: dict[int, int] = {}
        old_ids, new_ids = {}, {}
        for t in triples:
            old_ids[t["id"]] = mem.remember(t["old"]).id
            owner[old_ids[t["id"]]] = t["id"]
        clock.now += 30 * DAY
        for t in triples:
            new_ids[t["id"]] = mem.remember(t["new"]).id
            owner[new_ids[t["id"]]] = t["id"]
        hits = {0: 0, 1: 0}
        totals = {0: 0, 1: 0}
        for t in triples:
            top = mem.recall(t["question"], k=10).memories
            half = t["id"] % 2
            totals[half] += 1
            hits[half] += bool(top) and top[0].id == new_ids[t["id"]]
        linked = wrong = 0
        for t in triples:
            res = mem.why(t["new"], max_hops=1)
            for e in res.edges:
                if e.relation == SUPERSEDES:
                    linked += 1
                    wrong += owner.get(e.from_) != owner.get(e.to)
    return {"threshold": threshold, "tune_newest_first": hits[0] / totals[0],
            "report_newest_first": hits[1] / totals[1], "supersedes_edges_seen": linked,
            "wrong_links": wrong}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--no-write", action="store_true", help="print only, no results JSON")
    args = parser.parse_args()
    triples = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line]
    settings = Settings.from_env().with_overrides(autograph="off",
                                                  **embedder_overrides(args.embedder))
    default = limits.SUPERSEDE_SUBJECT_OVERLAP
    off = run(triples, OFF, settings)
    sweep = [run(triples, t, settings) for t in THRESHOLDS]
    best = max(sweep, key=lambda r: (r["tune_newest_first"] - r["wrong_links"] / len(triples),
                                     r["threshold"] == default))
    limits.SUPERSEDE_SUBJECT_OVERLAP = default
    rows = [["off", f"{off['tune_newest_first']:.3f}", f"{off['report_newest_first']:.3f}",
             off["wrong_links"]]]
    rows += [[r["threshold"], f"{r['tune_newest_first']:.3f}", f"{r['report_newest_first']:.3f}",
              r["wrong_links"]] for r in sweep]
    print(f"{len(triples)} triples, embedder {args.embedder}; tuned on even ids, reported on odd")
    print_table(["overlap threshold", "newest first (tune, even)",
                 "newest first (report, odd)", "wrong links"], rows)
    print(f"chosen on the tuning half: {best['threshold']} (committed default {default}) → "
          f"held-out newest first {best['report_newest_first']:.3f} (off: "
          f"{off['report_newest_first']:.3f})")
    if not args.no_write:
        write_results(f"updates_{args.embedder}", {
            "triples": len(triples), "embedder": args.embedder, "off": off, "sweep": sweep,
            "chosen_threshold": best["threshold"], "committed_threshold": default,
            "held_out_newest_first": best["report_newest_first"], "target": 0.90})


if __name__ == "__main__":
    main()

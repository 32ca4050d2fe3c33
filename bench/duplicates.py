"""Precision/recall of the near-duplicate detector on bench/data/duplicates.jsonl.

The pairs are split by topic (template) into two halves: thresholds are tuned on the tuning half
(the highest recall whose precision stays >= 0.98, the target) and figures are reported on the held-out half,
so no held-out topic influenced a threshold. Modes: "lexical" (no vectors: a fact not embedded
yet) and one per embedder named with --embedder (cosine from that embedder plus the lexical check).

  python3 bench/duplicates.py --embedder hash
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _common  # noqa: F401  (puts this checkout first on sys.path)
from _common import print_table, write_results

from velesmem.config import Settings
from velesmem.embed.loader import load_embedder
from velesmem.memory import duplicates as dup

DATA = Path(__file__).resolve().parent / "data" / "duplicates.jsonl"
TUNE_PRECISION = 0.98  # the target: thresholds with the most recall that keep it on the tuning half
LEXICAL_GRID = [round(0.3 + 0.05 * i, 2) for i in range(15)]
COSINE_GRID = [round(0.7 + 0.02 * i, 2) for i in range(16)] + [1.01]
_SIGNATURES: dict[str, dup.Signature] = {}


def _sig(text: str) -> dup.Signature:
    if text not in _SIGNATURES:
        _SIGNATURES[text] = dup.signature(text)
    return _SIGNATURES[text]


def score(rows: list[dict], cos: dict[int, float] | None, lexical: float,
          vector: float) -> dict[str, float]:
    tp = fp = fn = 0
    kinds: dict[str, list[int]] = {}
    for r in rows:
        got = dup.is_duplicate(_sig(r["a"]), _sig(r["b"]),
                               None if cos is None else cos[r["id"]], lexical=lexical, vector=vector)
        tp += got and r["label"] == 1
        fp += got and r["label"] == 0
        fn += (not got) and r["label"] == 1
        kinds.setdefault(r["kind"], [0, 0])[0] += got == bool(r["label"])
        kinds[r["kind"]][1] += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "tp": tp, "fp": fp,
            "fn": fn, "pairs": len(rows),
            "right_by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(kinds.items())}}


def tune(rows: list[dict], cos: dict[int, float] | None) -> tuple[float, float]:
    best: tuple[float, float, float] | None = None  # (recall, lexical, vector): most recall,
    # then the strictest thresholds that reach it
    for lexical in LEXICAL_GRID:
        for vector in (COSINE_GRID if cos is not None else [1.01]):
            s = score(rows, cos, lexical, vector)
            if s["precision"] < TUNE_PRECISION:
                continue
            key = (s["recall"], lexical, vector)
            if best is None or key > best:
                best = key
    assert best is not None, "no threshold reaches the target precision on the tuning half"
    return best[1], best[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", action="append", default=[],
                        help="embedder to add a vector mode for (hash, local; repeatable)")
    parser.add_argument("--out", type=Path, help="result file (default bench/results/duplicates.json)")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    topics = sorted({r["topic"] for r in rows})
    tune_topics = set(topics[0::2])
    tune_rows = [r for r in rows if r["topic"] in tune_topics]
    held_rows = [r for r in rows if r["topic"] not in tune_topics]
    modes: dict[str, dict[int, float] | None] = {"lexical": None}
    shipped_thresholds = {"lexical": dup.Thresholds(dup.LEXICAL_THRESHOLD, 1.01)}
    for name in args.embedder:
        embedder = load_embedder(Settings(embedder=name))
        shipped_thresholds[name] = dup.thresholds(embedder.model)
        va = embedder.embed([r["a"] for r in rows])
        vb = embedder.embed([r["b"] for r in rows])
        modes[name] = {r["id"]: float(va[n] @ vb[n]) for n, r in enumerate(rows)}
    results = {}
    table = []
    for mode, cos in modes.items():
        lexical, vector = tune(tune_rows, cos)
        tuned = score(tune_rows, cos, lexical, vector)
        held = score(held_rows, cos, lexical, vector)
        ship = shipped_thresholds[mode]
        shipped = score(held_rows, cos, ship.lexical, ship.cosine)
        results[mode] = {"tuned_thresholds": {"lexical": lexical, "cosine": vector},
                         "tuning_half": tuned, "held_out": held,
                         "held_out_with_shipped_thresholds": shipped}
        table.append([mode, lexical, vector, tuned["precision"], tuned["recall"],
                      held["precision"], held["recall"], shipped["precision"], shipped["recall"]])
    print_table(["mode", "lexical t", "cosine t", "tune P", "tune R", "held-out P", "held-out R",
                 "shipped P", "shipped R"], table)
    path = write_results("duplicates", {
        "data": str(DATA.relative_to(DATA.parents[2])), "pairs": len(rows),
        "split": "by topic: tuning topics " + ", ".join(sorted(tune_topics))
                 + "; every other topic held out (figures reported on the held-out half)",
        "shipped_thresholds": {m: {"lexical": t.lexical, "cosine": t.cosine}
                               for m, t in shipped_thresholds.items()},
        "targets": {"precision": 0.98, "recall": 0.80}, "modes": results}, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Precision and recall of the offline entity finder on bench/data/entities.jsonl.

52 hand-labelled project notes, each with every entity a person would name in it: people,
known technologies, and services or systems named with common nouns ("the rate limiter", "the
billing service"), plus notes where a system noun is only described ("the new service", "the
failed job") and names nothing. ``velesmem.extract.names.find_names`` is run on each text;
precision and recall are counted over (note, canonical name) pairs, overall and for the
``system`` kind alone. Nothing was tuned on this set after it was written (the rules came first;
three labels that were wrong, systems the rule rightly found, were corrected).

Run: python3 bench/entities.py [--no-write]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import print_table, write_results

from velesmem.extract.names import SYSTEM, SYSTEM_NOUNS, find_names

DATA = Path(__file__).resolve().parent / "data" / "entities.jsonl"


def _is_system(name: str) -> bool:
    return name.split()[-1] in SYSTEM_NOUNS and len(name.split()) > 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    counts = {"all": [0, 0, 0], "system": [0, 0, 0]}  # tp, fp, fn
    wrong: list[dict[str, object]] = []
    for r in rows:
        found = find_names(r["text"])
        got = {i.canonical for i in found}
        systems = {i.canonical for i in found if i.kind == SYSTEM}
        expected = set(r["entities"])
        for key, g, e in (("all", got, expected),
                          ("system", systems, {x for x in expected if _is_system(x)})):
            counts[key][0] += len(g & e)
            counts[key][1] += len(g - e)
            counts[key][2] += len(e - g)
        if got != expected:
            wrong.append({"text": r["text"], "extra": sorted(got - expected),
                          "missing": sorted(expected - got)})
    result = {}
    for key, (tp, fp, fn) in counts.items():
        result[key] = {"precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
                       "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
                       "tp": tp, "fp": fp, "fn": fn}
    print_table(["kind", "precision", "recall", "tp", "fp", "fn"],
                [[k, v["precision"], v["recall"], v["tp"], v["fp"], v["fn"]]
                 for k, v in result.items()])
    for w in wrong:
        print(f"  {w['text']}  extra={w['extra']} missing={w['missing']}")
    if not args.no_write:
        path = write_results("entities", {"data": "bench/data/entities.jsonl",
                                          "notes": len(rows), "kinds": result, "wrong": wrong})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

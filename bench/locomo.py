"""LoCoMo turn retrieval: hit@1/5/10 per question category, vector-only vs hybrid recall.

Every turn of ``shared/data/locomo10.json`` becomes a fact (``"<speaker>: <text>"``, the session
date as ``_veles_date``, the turn's ``dia_id`` in metadata), one store per conversation in a temp
dir, with the hash embedder. Each question of categories 1-4 is asked with ``recall(k=10)``; a
hit@k counts when a turn listed in its evidence is among the first k results.

    python3 bench/locomo.py [--data PATH] [--limit-conversations N] [--embedder local]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import command, embedder_overrides, machine, print_table, write_results

import velesmem
from velesmem.config import Settings
from velesmem.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
MODES = ("vector", "hybrid")


def session_date(raw: str) -> int | None:
    """'1:56 pm on 8 May, 2023' → 20230508."""
    m = re.search(r"(\d{1,2}) (\w+),? (\d{4})", raw)
    if not m:
        return None
    d = dt.datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%d %B %Y").date()
    return d.year * 10000 + d.month * 100 + d.day


def turns(conversation: dict) -> list[tuple[str, str, int | None]]:
    """(fact text, dia_id, date) for every turn of every session."""
    out = []
    n = 1
    while f"session_{n}" in conversation or f"session_{n}_date_time" in conversation:
        date = session_date(conversation.get(f"session_{n}_date_time", ""))
        for turn in conversation.get(f"session_{n}", []):
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            out.append((f"{turn['speaker']}: {text}", turn["dia_id"], date))
        n += 1
    return out


def evidence_ids(evidence: list[str]) -> set[str]:
    out = set()
    for item in evidence:
        for part in re.split(r"[;,]", item):
            if part.strip():
                out.add(part.strip())
    return out


def run_conversation(sample: dict, tally: dict, settings: Settings) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        dia_of: dict[int, set[str]] = defaultdict(set)
        with velesmem.open(tmp, settings=settings).memory as mem:
            start = time.perf_counter()
            stored = 0
            for text, dia, date in turns(sample["conversation"]):
                meta = {"dia_id": dia}
                if date is not None:
                    meta["_veles_date"] = date
                try:
                    fid = mem.remember(text, metadata=meta).id
                except InvalidInput:
                    continue  # over the fact cap (none in this data set)
                dia_of[fid].add(dia)
                stored += 1
            load_s = time.perf_counter() - start
        for mode in MODES:
            with velesmem.open(tmp, settings=settings.with_overrides(recall_mode=mode)).memory as mem:
                for qa in sample["qa"]:
                    cat = qa.get("category")
                    if cat not in CATEGORIES:
                        continue
                    gold = evidence_ids(qa.get("evidence", []))
                    if not gold:
                        continue
                    hits = mem.recall(str(qa["question"]), k=max(KS)).memories
                    ranks = [n for n, m in enumerate(hits) if dia_of[m.id] & gold]
                    first = ranks[0] if ranks else None
                    for key in (cat, "all"):
                        row = tally[mode][key]
                        row["n"] += 1
                        for k in KS:
                            row[f"hit@{k}"] += int(first is not None and first < k)
    return stored, load_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--embedder", default="hash", help="hash, local, ollama or openai "
                        "(or a local graph: local:all-MiniLM-L6-v2-int8)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "locomo.json")
    args = parser.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))[: args.limit_conversations]
    settings = Settings.from_env().with_overrides(**embedder_overrides(args.embedder))
    tally: dict = {m: defaultdict(lambda: {"n": 0, **{f"hit@{k}": 0 for k in KS}})
                   for m in MODES}
    facts = 0
    started = time.perf_counter()
    for sample in data:
        stored, _ = run_conversation(sample, tally, settings)
        facts += stored
    elapsed = time.perf_counter() - started
    rows = []
    print(f"LoCoMo turn retrieval, {args.embedder} embedder, {len(data)} conversations, {facts} facts, "
          f"{elapsed:.1f} s")
    for mode in MODES:
        for key in (*CATEGORIES, "all"):
            row = tally[mode].get(key)
            if not row or not row["n"]:
                continue
            name = CATEGORIES.get(key, "all") if key != "all" else "all (1-4)"
            rates = {f"hit@{k}": row[f"hit@{k}"] / row["n"] for k in KS}
            rows.append({"mode": mode, "category": name, "n": row["n"], **rates})
    print_table(["mode", "category", "n", *(f"hit@{k}" for k in KS)],
                [[r["mode"], r["category"], r["n"], *(f"{r[f'hit@{k}']:.3f}" for k in KS)]
                 for r in rows])
    print(f"command: {command()}\nmachine: {machine()}")
    out = write_results("locomo", {"facts": facts, "conversations": len(data),
                                   "seconds": elapsed, "rows": rows}, args.output)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

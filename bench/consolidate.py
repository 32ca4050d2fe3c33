"""Consolidation at 10k facts, 20 % of them near-duplicates: distinct facts per top-10, the
``consolidate --apply`` command's time, and that every original text survives.

Builds one store (seeded): 8,000 distinct project facts (a system, an environment, an attribute
and its value, from 10 attribute templates of 3 wordings each) and 2,000 paraphrases of randomly
chosen ones (another wording, the same values), remembered in shuffled order with the product's
defaults (near-duplicate detection on). Then:

- the duplicate links made on remember, and how many join two different facts (wrong);
- recall: 300 questions, each about one fact's system, environment and attribute; the top 10
  are mapped to their fact's group (a fact and its paraphrases are one group) and the distinct
  groups counted. Measured with duplicate collapsing on (the default), off (what collapsing
  buys), and after the consolidation run (archived members leave recall);
- the real command ``velesdb-memory consolidate --apply`` as a subprocess on the store,
  wall-clock (it opens the store, plans, applies in one transaction);
- every remembered id is read back after the run (its text unchanged) and found in the real
  ``velesdb-memory export`` output.

Targets (issue 26): ≥ 9.5 distinct facts per top-10 on average; apply ≤ 60 s; every original
text retrievable by id. Writes bench/results/consolidate.json.

Run: python3 bench/consolidate.py [--embedder hash] [--facts 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import embedder_overrides, print_table, write_results

import velesmem
from velesmem.config import Settings
from velesmem.ids import to_i64, to_u64

SEED = 2026_12_05
DUPLICATE_SHARE = 0.2
SYSTEMS = [f"{a} {b}" for a in ("billing", "search", "ingest", "auth", "media", "ledger",
                                  "catalog", "payments", "notify", "reporting", "profile",
                                  "inventory", "shipping", "pricing", "review", "session",
                                  "export", "import", "archive", "audit")
           for b in ("api", "worker", "cache", "queue", "scheduler", "gateway", "indexer",
                     "proxy", "store", "stream")]
ENVIRONMENTS = ("staging", "production", "development", "test")
# (value choices, three wordings with {sys}, {env} and {v}, the question's words)
ATTRIBUTES: list[tuple[list[str], list[str], str]] = [
    ([str(n) for n in (5, 10, 15, 20, 30, 45, 60, 90)],
     ["In {env} the {sys} times out after {v} seconds.",
      "Requests to the {sys} in {env} time out after {v} seconds.",
      "The {sys} has a {v} second timeout in {env}."], "timeout seconds"),
    ([str(n) for n in (2, 3, 4, 6, 8, 12, 16, 24)],
     ["The {sys} runs {v} replicas in {env}.",
      "In {env}, {v} replicas of the {sys} are running.",
      "We run the {sys} with {v} replicas in {env}."], "replicas"),
    (["Kenji Sato", "Maria Lopez", "Aisha Khan", "Tom Becker", "Priya Natarajan", "Lars Eriksen",
      "Chen Wei", "Sofia Rossi"],
     ["{v} owns the {sys} in {env}.",
      "The {sys} in {env} is owned by {v}.",
      "Ownership of the {sys} in {env} sits with {v}."], "owner"),
    (["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
     ["The {sys} in {env} is deployed every {v}.",
      "Deploys of the {sys} to {env} happen on {v}.",
      "We deploy the {sys} in {env} each {v}."], "deploy day"),
    ([str(n) for n in (7, 14, 30, 60, 90, 180, 365)],
     ["Logs of the {sys} in {env} are kept for {v} days.",
      "The {sys} keeps its {env} logs for {v} days.",
      "Retention for {env} logs of the {sys} is {v} days."], "log retention days"),
    ([str(n) for n in (256, 512, 1024, 2048, 4096)],
     ["Each {sys} pod in {env} gets {v} MB of memory.",
      "The {sys} pods in {env} have a {v} MB memory limit.",
      "In {env}, the memory limit of a {sys} pod is {v} MB."], "memory limit MB"),
    ([str(n) for n in (8080, 8443, 9090, 9443, 7000, 6000)],
     ["The {sys} listens on port {v} in {env}.",
      "In {env} the {sys} is served on port {v}.",
      "Port {v} is where the {sys} answers in {env}."], "port"),
    (["PostgreSQL", "MySQL", "Redis", "DynamoDB", "Cassandra"],
     ["The {sys} stores its data in {v} in {env}.",
      "In {env}, data of the {sys} lives in {v}.",
      "{v} holds the {sys} data in {env}."], "database"),
    ([str(n) for n in (100, 200, 500, 1000, 2000)],
     ["The {sys} in {env} accepts at most {v} requests per second.",
      "In {env}, the {sys} is rate limited to {v} requests per second.",
      "Rate limit of the {sys} in {env}: {v} requests per second."], "rate limit"),
    ([str(n) for n in (1, 2, 5, 10, 15)],
     ["Alerts for the {sys} in {env} fire after {v} minutes of errors.",
      "The {sys} pages on-call in {env} after {v} minutes of errors.",
      "In {env}, {v} minutes of errors on the {sys} trigger an alert."], "alert minutes"),
]


def corpus(n: int, rng: random.Random) -> tuple[list[tuple[str, int]], list[dict[str, Any]]]:
    """(text, group) for n facts, 20 % paraphrases of others, shuffled; and each group's
    slots (for its question)."""
    base_n = int(n * (1 - DUPLICATE_SHARE))
    slots = [(s, e, a) for s in range(len(SYSTEMS)) for e in range(len(ENVIRONMENTS))
             for a in range(len(ATTRIBUTES))]
    rng.shuffle(slots)
    if base_n > len(slots):
        raise SystemExit(f"at most {len(slots)} distinct facts")
    groups: list[dict[str, Any]] = []
    texts: list[tuple[str, int]] = []
    for g, (s, e, a) in enumerate(slots[:base_n]):
        values, forms, words = ATTRIBUTES[a]
        form = rng.randrange(len(forms))
        fill = {"sys": SYSTEMS[s], "env": ENVIRONMENTS[e], "v": rng.choice(values)}
        groups.append({"fill": fill, "form": form, "attribute": a, "words": words})
        texts.append((_cap(forms[form].format(**fill)), g))
    for g in rng.sample(range(base_n), n - base_n):
        info = groups[g]
        forms = ATTRIBUTES[info["attribute"]][1]
        other = rng.choice([f for f in range(len(forms)) if f != info["form"]])
        texts.append((_cap(forms[other].format(**info["fill"])), g))
    rng.shuffle(texts)
    return texts, groups


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def distinct(mem: Any, questions: list[str], group_of: dict[int, int]) -> float:
    """Mean number of distinct groups among each question's top 10."""
    total = 0
    for q in questions:
        ids = [m.id for m in mem.recall(q, k=10).memories]
        total += len({group_of[i] for i in ids})
    return round(total / len(questions), 3)


def command(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(store)}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "velesmem", *args], env=env, text=True,
                          capture_output=True, check=True, timeout=1800)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rng = random.Random(SEED)
    texts, groups = corpus(args.facts, rng)
    asked = rng.sample(range(len(groups)), args.queries)
    questions = [f"{groups[g]['fill']['sys']} {groups[g]['fill']['env']} {groups[g]['words']}"
                 for g in asked]
    overrides = embedder_overrides(args.embedder)
    row: dict[str, Any] = {"facts": len(texts), "groups": len(groups),
                           "paraphrases": len(texts) - len(groups), "queries": len(questions)}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        group_of: dict[int, int] = {}
        text_of: dict[int, str] = {}
        start = time.perf_counter()
        with velesmem.open(store, settings=Settings(path=store, **overrides)) as rt:
            rt.memory.embedder.warm()
            for text, g in texts:
                fid = rt.memory.remember(text).id
                group_of[fid], text_of[fid] = g, text
            row["remember_s"] = round(time.perf_counter() - start, 1)
            links = [(to_u64(e.src), to_u64(e.dst)) for e in rt.store.export(
                rt.clock(), include_internal=False) if getattr(e, "relation", "") == "duplicate_of"]
            row["duplicate_links"] = len(links)
            row["wrong_duplicate_links"] = sum(1 for a, b in links if group_of[a] != group_of[b])
            row["distinct_top10_collapsed"] = distinct(rt.memory, questions, group_of)
        with velesmem.open(store, settings=Settings(path=store, dedup=False, **overrides)) as rt:
            row["distinct_top10_without_collapsing"] = distinct(rt.memory, questions, group_of)
        start = time.perf_counter()
        report = json.loads(command(store, "consolidate", "--apply").stdout)
        row["consolidate_apply_s"] = round(time.perf_counter() - start, 1)
        row["archived"] = len(report["changes"])
        row["run"] = report["run"]
        with velesmem.open(store, settings=Settings(path=store, **overrides)) as rt:
            row["distinct_top10_after_consolidation"] = distinct(rt.memory, questions, group_of)
            found = rt.store.facts([to_i64(i) for i in group_of], rt.clock())
            row["retrievable_by_id"] = sum(1 for i in group_of
                                           if found.get(to_i64(i)) is not None
                                           and found[to_i64(i)].content == text_of[i])
        out = Path(tmp) / "export.jsonl"
        command(store, "export", "--output", str(out))
        exported = {int(x["id"]): x["content"] for x in map(json.loads, out.read_text().splitlines())
                    if x.get("type") == "fact"}
        row["in_export"] = sum(1 for i in group_of if exported.get(i) == text_of[i])
        row["remembered_ids"] = len(group_of)
    targets = {"distinct_top10": 9.5, "consolidate_apply_s": 60.0}
    print_table(["facts", "dup links (wrong)", "distinct (collapsed)", "distinct (no collapse)",
                 "distinct (after run)", "apply s", "archived", "by id", "in export"],
                [[row["facts"], f"{row['duplicate_links']} ({row['wrong_duplicate_links']})",
                  row["distinct_top10_collapsed"],
                  row["distinct_top10_without_collapsing"],
                  row["distinct_top10_after_consolidation"], row["consolidate_apply_s"],
                  row["archived"], f"{row['retrievable_by_id']}/{row['remembered_ids']}",
                  f"{row['in_export']}/{row['remembered_ids']}"]])
    if not args.no_write:
        path = write_results("consolidate", {"embedder": args.embedder, "row": row,
                                             "targets": targets})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

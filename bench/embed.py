"""Embedder speed: batched sentences/s, 8 concurrent single-text callers, and query latency.

The sentences are LoCoMo turns (``"<speaker>: <text>"``, as bench/locomo.py stores them) and the
queries its questions, from ``shared/data/locomo10.json``.

* **batched**: one caller embeds ``--sentences`` turns in calls of 1, 8, 32 and 64 texts;
* **8 callers**: 8 threads each embed one text per call (how concurrent ``remember`` calls reach
  the embedder; the local model merges them into shared batches), with the turns and with the
  (shorter) questions as texts;
* **CPU ms/text**: process CPU time per turn in batches of 64, which other load on the machine
  does not inflate (2 idle cores top out near 2000 / this figure texts/s);
* **query**: one short question at a time, p50/p99 latency.

Each figure is the best of ``--repeat`` runs: other load on the machine can only slow a run.

    python3 bench/embed.py [--embedders hash local local:all-MiniLM-L6-v2-int8] [--sentences 1000] [--queries 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

from _common import (command, embedder_overrides, machine, median, percentile, print_table,
                     write_results)

from velesmem.config import Settings
from velesmem.embed import load_embedder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo10.json"
BATCH_SIZES = (1, 8, 32, 64)
CALLERS = 8


def corpus(path: Path) -> tuple[list[str], list[str]]:
    """(turns as facts, questions) of every LoCoMo conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    facts, questions = [], []
    for sample in data:
        conversation = sample["conversation"]
        n = 1
        while f"session_{n}" in conversation or f"session_{n}_date_time" in conversation:
            facts += [f"{t['speaker']}: {t.get('text', '')}"
                      for t in conversation.get(f"session_{n}", [])]
            n += 1
        questions += [qa["question"] for qa in sample["qa"] if qa.get("question")]
    return facts, questions


def batched(embedder, texts: list[str], batch: int) -> tuple[float, float]:
    """(texts/s, CPU ms per text)."""
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start:start + batch])
    return (len(texts) / (time.perf_counter() - started),
            (time.process_time() - cpu) * 1000 / len(texts))


def concurrent(embedder, texts: list[str]) -> float:
    parts = [texts[i::CALLERS] for i in range(CALLERS)]
    barrier = threading.Barrier(CALLERS + 1)

    def caller(mine: list[str]) -> None:
        barrier.wait()
        for text in mine:
            embedder.embed([text])

    threads = [threading.Thread(target=caller, args=(p,)) for p in parts]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return len(texts) / (time.perf_counter() - started)


def query_latency(embedder, queries: list[str]) -> list[float]:
    out = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed([query])
        out.append((time.perf_counter() - started) * 1000)
    return out


def measure(embedder, facts: list[str], questions: list[str]) -> dict[str, float]:
    """One run of every figure."""
    figures = {f"batch_{b}": batched(embedder, facts, b)[0] for b in BATCH_SIZES}
    figures["cpu_ms_per_text"] = batched(embedder, facts, 64)[1]
    figures["callers_8"] = concurrent(embedder, facts)
    figures["callers_8_short"] = concurrent(embedder, (questions * 4)[:len(facts)])
    latencies = query_latency(embedder, questions)
    figures.update(query_p50_ms=median(latencies), query_p99_ms=percentile(latencies, 99))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", nargs="+",
                        default=["hash", "local", "local:all-MiniLM-L6-v2-int8"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per embedder; each figure keeps its best run")
    args = parser.parse_args()

    facts, questions = corpus(args.data)
    facts, questions = facts[:args.sentences], questions[:args.queries]
    print(f"machine: {machine()}\ncommand: {command()}")
    print(f"{len(facts)} LoCoMo turns (mean {sum(map(len, facts)) / len(facts):.0f} chars), "
          f"{len(questions)} questions (mean {sum(map(len, questions)) / len(questions):.0f} "
          "chars)\n")
    rows, results = [], {}
    for name in args.embedders:
        embedder = load_embedder(Settings(**embedder_overrides(name)))
        started = time.perf_counter()
        embedder.warm()
        warm_s = time.perf_counter() - started
        query_latency(embedder, questions[:20])  # settle caches before timing
        runs = [measure(embedder, facts, questions) for _ in range(args.repeat)]
        figures = {key: (min if key.startswith(("cpu", "query")) else max)(r[key] for r in runs)
                   for key in runs[0]}
        figures["warm_s"] = warm_s
        results[embedder.model] = figures
        rows.append([embedder.model, *(f"{figures[f'batch_{b}']:.0f}" for b in BATCH_SIZES),
                     f"{figures['callers_8']:.0f}", f"{figures['callers_8_short']:.0f}",
                     f"{figures['cpu_ms_per_text']:.2f}", f"{figures['query_p50_ms']:.2f}",
                     f"{figures['query_p99_ms']:.2f}", f"{warm_s:.2f}"])
    print_table(["embedder", *(f"batch {b} /s" for b in BATCH_SIZES), "8 callers /s",
                 "8 callers, questions /s", "CPU ms/text", "query p50 ms", "query p99 ms",
                 "warm s"], rows)
    print(f"\nresults: {write_results('embed', {'sentences': len(facts), 'results': results})}")


if __name__ == "__main__":
    main()

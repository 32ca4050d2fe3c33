"""A HotpotQA-style bridge benchmark: are both supporting facts of a two-hop question in top k?

Each question names a group and asks about the place it was founded in ("what does the town
where the Ardent Collective started export?"). Its first supporting fact ties the group to the
town and shares words with the question; the second says what the town exports and shares
none (only the town's made-up name connects the two, and the question never says it). Hundreds
of distractor facts about other towns and groups share the question's vocabulary.

The facts are stored twice: with plain ``remember`` (no graph), and through
``remember_extracted`` with ``outline`` directives naming each fact's topics (the graph an
agent builds as it works). Compared: ``recall`` top k on the plain store, and ``recall_fused``
top k on the graph store (hops 1), at the default graph_boost (0.15) and at 1.0 (a graph hit
weighs as much as the best text match).

    python3 bench/hotpot.py [--k 5]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from _common import machine, print_table, write_results

from velesmem.config import Settings
from velesmem.runtime import Runtime

SYLLABLES = ["vel", "mor", "ka", "dun", "sar", "tel", "bri", "oth", "ran", "quel", "zim", "fen",
             "lor", "gast", "ith", "mar", "pel", "dro", "cas", "wyn"]
GROUPS = ["Collective", "Guild", "Society", "Circle", "League", "Fellowship", "Union", "Order"]
ADJECTIVES = ["Ardent", "Silent", "Crimson", "Gilded", "Hollow", "Iron", "Lunar", "Northern",
              "Quiet", "Radiant", "Scarlet", "Verdant", "Woven", "Amber", "Cobalt", "Distant"]
GOODS = ["copper wire", "wool blankets", "glass beads", "dried figs", "cedar planks",
         "salt blocks", "silk thread", "clay tiles", "olive oil", "tin cups", "rope", "honey",
         "paper", "soap", "candles", "barley"]
N_QUESTIONS = 40
N_DISTRACTORS = 400


def name(rng: random.Random, used: set[str]) -> str:
    while True:
        word = "".join(rng.sample(SYLLABLES, 3)).capitalize()
        if word not in used:
            used.add(word)
            return word


def build(seed: int = 7) -> tuple[list[tuple[str, str, str, list[str], list[str]]], list[str]]:
    """(question, bridge fact, answer fact, bridge topics, answer topics) and distractors."""
    rng = random.Random(seed)
    used: set[str] = set()
    questions = []
    for i in range(N_QUESTIONS):
        group = f"{ADJECTIVES[i % len(ADJECTIVES)]} {GROUPS[(i * 3) % len(GROUPS)]} {i}"
        town = name(rng, used)
        good = GOODS[i % len(GOODS)]
        q = f"what does the place where the {group} was founded export"
        bridge = f"the {group} was founded in {town}"
        answer = f"{town} ships {good} to the coast every spring"
        questions.append((q, bridge, answer, [group.lower(), town.lower()], [town.lower()]))
    distractors = []
    for i in range(N_DISTRACTORS):
        town = name(rng, used)
        if i % 2:
            distractors.append(f"a group was founded in {town} to export stories")
        else:
            distractors.append(f"the place {town} is where traders export "
                               f"{GOODS[i % len(GOODS)]}")
    return questions, distractors


def directive(text: str, topics: list[str]) -> str:
    return f"fact: {text} | {', '.join(topics)}"


def run(k: int) -> dict[str, float]:
    questions, distractors = build()
    both = {"vector_only": 0, "graph": 0, "graph_boost_1": 0}
    with tempfile.TemporaryDirectory() as tmp:
        plain = Runtime.open(Settings(path=Path(tmp) / "plain", autograph="off"))
        graph = Runtime.open(Settings(path=Path(tmp) / "graph", autograph="off"))
        try:
            plain.wait_ready_sync(60)
            graph.wait_ready_sync(60)
            for text in distractors:
                plain.memory.remember(text)
                graph.memory.remember(text)
            lines = []
            for _q, bridge, answer, bt, at in questions:
                plain.memory.remember(bridge)
                plain.memory.remember(answer)
                lines += [directive(bridge, bt), directive(answer, at)]
            receipt = graph.extraction.remember_extracted("\n".join(lines), extractor="outline")
            deadline = time.monotonic() + 120
            while graph.extraction.extraction_status(receipt["request_id"])["state"] != \
                    "committed":
                assert time.monotonic() < deadline, "extraction did not commit"
                time.sleep(0.05)
            for q, bridge, answer, _bt, _at in questions:
                got = {m.content for m in plain.memory.recall(q, k=k).memories}
                both["vector_only"] += bridge in got and answer in got
                fused = {m.content for m in graph.memory.recall_fused(q, k=k, hops=1).memories}
                both["graph"] += bridge in fused and answer in fused
                boosted = {m.content for m in graph.memory.recall_fused(
                    q, k=k, hops=1, graph_boost=1.0).memories}
                both["graph_boost_1"] += bridge in boosted and answer in boosted
        finally:
            plain.close()
            graph.close()
    return {arm: n / len(questions) for arm, n in both.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5, help="top-k counted (default 5)")
    args = parser.parse_args()
    rates = run(args.k)
    print(f"bridge questions: {N_QUESTIONS}, distractors: {N_DISTRACTORS}, hash embedder, "
          f"both supporting facts in top {args.k}")
    print_table(["ranking", "both facts in top k"],
                [["recall (no graph)", f"{rates['vector_only']:.0%}"],
                 ["recall_fused, outline graph, graph_boost 0.15", f"{rates['graph']:.0%}"],
                 ["recall_fused, outline graph, graph_boost 1.0",
                  f"{rates['graph_boost_1']:.0%}"]])
    print(f"\nreproduce: python3 bench/hotpot.py --k {args.k}\nmachine: {machine()}")
    print(f"results: {write_results('hotpot', {'k': args.k, 'both_in_top_k': rates})}")


if __name__ == "__main__":
    main()

"""Importing 10k items from each memory server's format (``import --from``), with the local model.

For each source, n items (observations, memories, bullets, notes) are generated in its exact
format, in the shape of the fixture its real server made: server-memory and claude-code here,
mcp-memory-service, basic-memory and mem0 by ``bench/import_synth.py`` (a source is skipped,
with the reason printed, when that module or its generator is missing). Then the real command,
``velesdb-memory import --from SOURCE PATH``, runs in a subprocess on a fresh store with the
chosen embedder; the figure is facts written per second of its whole wall time (start, model
load, reading, checking, embedding, the one transaction). A second run of the same command
must write nothing (idempotent). Target: ≥ 200 items/s with the local model. For scale, the
embedder alone is timed on 2,000 of the same kind of sentences in this process, before and
after the imports (the machine is shared: its speed moves with the load).
Writes bench/results/import_sources.json.

Run: python3 bench/import_sources.py [--n 10000] [--embedder local] [--sources ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import load_average, print_table, write_results

SEED = 2028
TARGET_ITEMS_PER_S = 200.0
SOURCES = ("server-memory", "mcp-memory-service", "basic-memory", "mem0", "claude-code")
SUMMARY = re.compile(r"imported from \S+: ([\d,]+) facts, ([\d,]+) entities and ([\d,]+) links")
WORDS = """ledger payment refund invoice schema migration replica shard queue worker retry
timeout token cache index query deploy staging release flag metric alert rollback backup
restore window customer contract renewal audit policy secret rotation certificate proxy
gateway route header session cookie browser client server daemon thread kernel driver
sensor camera layout theme button form field label archive trace span event topic stream
batch schedule roadmap milestone sprint ticket patch hotfix regression benchmark profile
""".split()
PEOPLE = ("Ana", "Li", "Omar", "Sara", "Theo", "Mia", "Ravi", "Noor", "Ivan", "Zoe")


def sentence(rng: random.Random, i: int) -> str:
    """A distinct sentence for item ``i`` (its number makes it unique)."""
    w = rng.sample(WORDS, 7)
    return (f"{PEOPLE[i % len(PEOPLE)]} found that the {w[0]} {w[1]} needs the {w[2]} {w[3]} "
            f"checked before each {w[4]} {w[5]} {w[6]} (note {i}).")


def make_server_memory(n: int, directory: Path) -> Path:
    """``memory.jsonl``: entities of 10 observations each (n in all), each related to the
    previous one, as @modelcontextprotocol/server-memory writes them."""
    rng = random.Random(SEED)
    path = directory / "memory.jsonl"
    lines = []
    for e in range((n + 9) // 10):
        observations = [sentence(rng, i) for i in range(e * 10, min(n, e * 10 + 10))]
        lines.append(json.dumps({"type": "entity", "name": f"Component {e:05d}",
                                 "entityType": rng.choice(("service", "team", "person")),
                                 "observations": observations}, ensure_ascii=False))
    for e in range(1, (n + 9) // 10):
        lines.append(json.dumps({"type": "relation", "from": f"Component {e:05d}",
                                 "to": f"Component {e - 1:05d}", "relationType": "depends_on"}))
    path.write_text("\n".join(lines), encoding="utf-8")  # the server writes no final newline
    return path


def make_claude_code(n: int, directory: Path) -> Path:
    """A folder as Claude Code keeps it: half the items as bullets of project CLAUDE.md files
    (100 per file, 10 per section), half as auto-memory notes with a MEMORY.md index, each
    note linking the one before it."""
    rng = random.Random(SEED)
    root = directory / "claude"
    bullets, notes = n // 2, n - n // 2
    for f in range((bullets + 99) // 100):
        project = root / f"project-{f:04d}"
        project.mkdir(parents=True)
        lines = [f"# Project {f:04d}", ""]
        for i in range(f * 100, min(bullets, f * 100 + 100)):
            if i % 10 == 0:
                lines += ["", f"## Area {i // 10:05d}", ""]
            lines.append(f"- {sentence(rng, i)}")
        (project / "CLAUDE.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    memory = root / ".claude" / "projects" / "-work-bench" / "memory"
    memory.mkdir(parents=True)
    index = []
    kinds = ("user", "feedback", "project", "reference")
    for k in range(notes):
        name = f"note-{k:05d}"
        body = sentence(rng, bullets + k)
        if k:
            body += f"\n**How to apply:** see [[note-{k - 1:05d}]]."
        (memory / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: bench note {k}\nmetadata:\n  type: "
            f"{kinds[k % 4]}\n---\n\n{body}\n", encoding="utf-8")
        index.append(f"- [Note {k}]({name}.md) — bench")
    (memory / "MEMORY.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return root


def generators() -> dict[str, Callable[[int, Path], Path] | str]:
    """Each source's generator, or the reason it is missing."""
    found: dict[str, Callable[[int, Path], Path] | str] = {
        "server-memory": make_server_memory, "claude-code": make_claude_code}
    try:
        import import_synth
    except ImportError as exc:
        synth = None
        reason = f"bench/import_synth.py cannot be imported ({exc})"
    else:
        synth, reason = import_synth, ""
    for source in ("mcp-memory-service", "basic-memory", "mem0"):
        make = getattr(synth, "make_" + source.replace("-", "_"), None) if synth else None
        found[source] = make if callable(make) else (
            reason or f"bench/import_synth.py has no make_{source.replace('-', '_')}")
    return found


def embed_rate(embedder: str, n: int = 2000) -> float:
    """Sentences per second of the embedder alone (loaded first), on ``n`` bench sentences."""
    from velesmem.config import Settings
    from velesmem.embed.loader import load_embedder

    rng = random.Random(SEED + 1)
    texts = [sentence(rng, i) for i in range(n)]
    model = load_embedder(Settings(embedder=embedder))
    model.warm()
    t0 = time.perf_counter()
    model.embed(texts)
    return n / (time.perf_counter() - t0)


def run_import(source: str, path: Path, store: Path,
               embedder: str) -> tuple[float, float, list[int]]:
    """(wall seconds, CPU seconds, [facts, entities, links]) of one ``import --from`` in a
    subprocess (CPU: user + system of all its threads, from ``wait4``)."""
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(store), "VELESDB_MEMORY_EMBEDDER": embedder}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "velesmem", "import", "--from", source,
                                 str(path)], env=env, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    found = SUMMARY.search(stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"import --from {source} failed (exit {proc.returncode}): "
                         f"{stderr[-2000:]}")
    return (seconds, usage.ru_utime + usage.ru_stime,
            [int(x.replace(",", "")) for x in found.groups()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--sources", nargs="+", default=list(SOURCES), choices=SOURCES)
    args = parser.parse_args()
    makers = generators()
    results: dict[str, dict[str, object]] = {}
    skipped: dict[str, str] = {}
    rows = []
    floor_before = embed_rate(args.embedder)
    print(f"{args.embedder} embedder alone: {floor_before:,.0f} sentences/s", flush=True)
    with tempfile.TemporaryDirectory(prefix="velesmem-import-sources-") as tmp:
        for source in args.sources:
            make = makers[source]
            if isinstance(make, str):
                print(f"skipped {source}: {make}")
                skipped[source] = make
                continue
            work = Path(tmp) / source
            work.mkdir()
            path = make(args.n, work)
            store = work / "store"
            seconds, cpu, (facts, entities, links) = run_import(source, path, store,
                                                                 args.embedder)
            again_s, _, again = run_import(source, path, store, args.embedder)
            if again != [0, 0, 0]:
                raise SystemExit(f"a second import of {source} wrote {again}")
            rate = facts / seconds
            results[source] = {"items": args.n, "facts": facts, "entities": entities,
                               "links": links, "seconds": round(seconds, 2),
                               "items_per_s": round(rate, 1), "rerun_seconds": round(again_s, 2),
                               "cpu_seconds": round(cpu, 1),
                               "items_per_cpu_s": round(facts / cpu, 1),
                               "met": rate >= TARGET_ITEMS_PER_S}
            rows.append([source, f"{facts:,}", f"{entities:,}", f"{links:,}", f"{seconds:.1f} s",
                         f"{rate:,.0f}", f"{again_s:.1f} s"])
            print(f"{source}: {facts:,} facts in {seconds:.1f} s = {rate:,.0f} items/s",
                  flush=True)
    floor_after = embed_rate(args.embedder)
    print(f"{args.embedder} embedder alone, after: {floor_after:,.0f} sentences/s")
    print_table(["source", "facts", "entities", "links", "import", "items/s", "re-run (0 new)"],
                rows)
    write_results("import_sources", {"n": args.n, "embedder": args.embedder,
                                     "target_items_per_s": TARGET_ITEMS_PER_S,
                                     "sources": results, "skipped": skipped,
                                     "embedder_alone_per_s": [round(floor_before, 1),
                                                              round(floor_after, 1)],
                                     "load": load_average()})


if __name__ == "__main__":
    main()

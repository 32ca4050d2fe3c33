"""Synthetic data of other memory servers, in each one's exact format, for import benchmarks.

One generator per source, ``make_<source>(n, directory) -> Path``: n items (memories,
observations) written under ``directory`` in the shape of the fixture the real server made
(tests/fixtures/import/<source>/), returning the path ``import --from <source>`` takes. Seeded:
the same n gives the same files. Texts are distinct sentences of a few hundred words' vocabulary.

- ``make_mcp_memory_service``: a ``sqlite_vec.db`` whose ``memories``, ``memory_graph`` and
  ``metadata`` tables are created by the fixture's own CREATE statements (its sqlite-vec tables
  are left out: the reader never opens them); every 50th memory a versioned update of the one
  before (``parent_id``), one ``memory_graph`` association per 20 memories.
- ``make_basic_memory``: a folder of notes of 10 observations each, with frontmatter, tags,
  context and a relation to the previous note, as basic-memory writes them.
- ``make_mem0``: ``get_all.json``, mem0's ``{"results": [...]}`` over 20 users and 3 agents.

Run: python3 bench/import_synth.py [--n 1000] [--out DIR]   (writes all three, prints paths)
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import sqlite3
import tempfile
import uuid
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "import"
SEED = 2028
START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
MMS_TABLES = ("memories", "memory_graph", "metadata")
MMS_TYPES = ("note", "decision", "learning", "error", "reference", "observation", "meeting")
BM_CATEGORIES = ("fact", "decision", "idea", "risk", "tech", "finding", "action")
WORDS = """service cache index query deploy staging schema migration latency budget owner team
review release flag metric alert rollback replica shard queue worker retry timeout token
parser embed vector cluster backup restore window customer contract renewal invoice ledger
balance payment refund audit policy secret rotation certificate proxy gateway route header
session cookie browser client server daemon thread process memory disk network packet socket
kernel driver firmware battery sensor camera screen layout theme font color icon button form
field label input output file folder archive log trace span event topic stream batch job
schedule cron hourly daily weekly monthly quarterly planning roadmap milestone sprint ticket
bug fix patch hotfix regression benchmark profile flame graph sample histogram percentile
median mean variance error warning notice debug verbose quiet strict lenient default custom
""".split()
NAMES = ("ana", "li", "omar", "sara", "theo", "mia", "ravi", "noor", "ivan", "zoe")


def _sentence(rng: random.Random, i: int) -> str:
    words = rng.sample(WORDS, 9)
    who = NAMES[i % len(NAMES)]
    return (f"{who.capitalize()} noted that the {words[0]} {words[1]} needs a {words[2]} "
            f"{words[3]} before the {words[4]} {words[5]} ({words[6]} {words[7]} {words[8]}, "
            f"item {i}).")


def _times(i: int) -> tuple[float, float]:
    created = START + dt.timedelta(minutes=7 * i)
    return created.timestamp(), (created + dt.timedelta(hours=i % 5)).timestamp()


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def _mms_schema() -> list[str]:
    """The CREATE statements of the fixture's plain tables (the real server's schema)."""
    db = FIXTURES / "mcp-memory-service" / "sqlite_vec.db"
    with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as conn:
        rows = dict(conn.execute("select name, sql from sqlite_master where type = 'table'"))
    conn.close()
    return [rows[name] for name in MMS_TABLES]


def make_mcp_memory_service(n: int, directory: Path) -> Path:
    """``directory/sqlite_vec.db`` holding n live memories in mcp-memory-service's schema."""
    rng = random.Random(SEED)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sqlite_vec.db"
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        for statement in _mms_schema():
            conn.execute(statement)
        conn.execute("insert into metadata values ('schema_version', '19')")
        rows, hashes = [], []
        for i in range(n):
            text = _sentence(rng, i)
            digest = hashlib.sha256(text.encode()).hexdigest()
            created, updated = _times(i)
            parent = hashes[-1] if i % 50 == 49 else None
            meta = {"conversation_id": f"conv-{i // 25}", "source": "bench"}
            rows.append((digest, text, f"{rng.choice(WORDS)},{rng.choice(WORDS)}",
                         MMS_TYPES[i % len(MMS_TYPES)], json.dumps(meta), created, updated,
                         _iso(created), _iso(updated), parent, 2 if parent else 1))
            hashes.append(digest)
        conn.executemany(
            "insert into memories (content_hash, content, tags, memory_type, metadata, "
            "created_at, updated_at, created_at_iso, updated_at_iso, parent_id, version) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.executemany(
            "insert into memory_graph (source_hash, target_hash, similarity, connection_types, "
            "metadata, created_at, relationship_type) values (?, ?, 0.5, '[\"semantic\"]', "
            "'{}', ?, 'related')",
            [(hashes[i], hashes[i - 7], _times(i)[0]) for i in range(7, n, 20)])
        conn.commit()
    finally:
        conn.close()
    return path


def make_basic_memory(n: int, directory: Path) -> Path:
    """``directory/notes``: notes of 10 observations each, n observations in all."""
    rng = random.Random(SEED)
    root = directory / "notes"
    for note in range((n + 9) // 10):
        title = f"Topic {note:05d} {WORDS[note % len(WORDS)]}"
        folder = root / f"area-{note // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        tags = [WORDS[(note + k) % len(WORDS)] for k in (3, 11)]
        lines = ["---", f"title: {title}", "type: note",
                 f"permalink: bench/area-{note // 100:03d}/topic-{note:05d}", "tags:",
                 *(f"- {t}" for t in tags), "---", "", f"# {title}", "", "## Observations"]
        for i in range(note * 10, min(n, note * 10 + 10)):
            context = f" ({rng.choice(WORDS)} {rng.choice(WORDS)})" if i % 3 == 0 else ""
            lines.append(f"- [{BM_CATEGORIES[i % len(BM_CATEGORIES)]}] {_sentence(rng, i)} "
                         f"#{rng.choice(WORDS)}{context}")
        if note:
            previous = f"Topic {note - 1:05d} {WORDS[(note - 1) % len(WORDS)]}"
            lines += ["", "## Relations", f"- relates_to [[{previous}]]"]
        (folder / f"{title}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def make_mem0(n: int, directory: Path) -> Path:
    """``directory/get_all.json``: n memories as mem0's ``get_all`` returns them."""
    rng = random.Random(SEED)
    directory.mkdir(parents=True, exist_ok=True)
    results = []
    for i in range(n):
        text = _sentence(rng, i)
        created, updated = _times(i)
        item: dict[str, object] = {
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "memory": text,
            "hash": hashlib.md5(text.encode()).hexdigest(),  # mem0's own hash is md5
            "metadata": {"category": rng.choice(WORDS)},
            "created_at": dt.datetime.fromtimestamp(created, tz=dt.UTC).isoformat(),
            "updated_at": dt.datetime.fromtimestamp(updated, tz=dt.UTC).isoformat(),
            "user_id": f"user-{i % 20:02d}",
            "role": "user",
        }
        if i % 7 == 0:
            item["agent_id"] = f"agent-{i % 3}"
        if i % 11 == 0:
            item["run_id"] = f"run-{i // 11}"
        results.append(item)
    path = directory / "get_all.json"
    path.write_text(json.dumps({"results": results}, indent=2) + "\n", encoding="utf-8")
    return path


GENERATORS = {"mcp-memory-service": make_mcp_memory_service, "basic-memory": make_basic_memory,
              "mem0": make_mem0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="import-synth-"))
    for source, make in GENERATORS.items():
        print(f"{source}: {make(args.n, out / source)}")


if __name__ == "__main__":
    main()

"""Import from mcp-memory-service: its real SQLite database (tests/fixtures/import/
mcp-memory-service, written by mcp-memory-service 12.4.0 itself) into a real store."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import velesmem
from tests.support.importing import FIXTURES, import_into, store_counts, stored_facts
from velesmem.importers import CorruptInput

FOLDER = FIXTURES / "mcp-memory-service"
DB = FOLDER / "sqlite_vec.db"
EXPECTED = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture
def runtime(tmp_path: Path):
    with velesmem.open(tmp_path / "store", embedder="hash") as rt:
        yield rt


def _rows() -> dict[str, tuple]:
    with sqlite3.connect(f"file:{DB}?mode=ro&immutable=1", uri=True) as conn:
        rows = {r[0]: r for r in conn.execute(
            "select content, content_hash, created_at, updated_at, deleted_at from memories")}
    conn.close()
    return rows


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "copy" / "sqlite_vec.db"
    target.parent.mkdir()
    shutil.copyfile(DB, target)
    return target


def test_every_live_memory_arrives_once_with_its_tags_type_metadata_and_times(runtime) -> None:
    live = [e for e in EXPECTED if not e["deleted"]]
    _, report = import_into(runtime, "mcp-memory-service", DB)
    facts = {f["content"]: f for f in stored_facts(runtime)}
    assert sorted(facts) == sorted(e["content"] for e in live)
    assert report.facts == len(live) and report.skipped == 1
    rows = _rows()
    for e in live:
        meta = facts[e["content"]]["metadata"]
        assert meta["tags"] == e["tags"]
        assert meta["memory_type"] == e["memory_type"]
        assert e["metadata"].items() <= meta.items()
        assert meta["imported_from"] == "mcp-memory-service"
        _, content_hash, created, updated, _ = rows[e["content"]]
        assert meta["content_hash"] == content_hash
        day = dt.datetime.fromtimestamp(created, tz=dt.UTC)
        assert meta["_veles_date"] == int(day.strftime("%Y%m%d"))
        assert meta["created_at"].startswith(day.strftime("%Y-%m-%dT%H:%M:%S"))
        assert meta["updated_at"].startswith(
            dt.datetime.fromtimestamp(updated, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S"))


def test_a_tombstoned_memory_is_skipped_with_its_reason(runtime) -> None:
    deleted = next(e["content"] for e in EXPECTED if e["deleted"])
    plan, _ = import_into(runtime, "mcp-memory-service", DB)
    assert deleted not in {f["content"] for f in stored_facts(runtime)}
    assert [s.reason for s in plan.skipped] == ["deleted in mcp-memory-service (a tombstone row)"]
    assert "table memories row" in plan.skipped[0].where


def test_a_versioned_update_becomes_a_supersedes_edge_that_why_walks(runtime) -> None:
    newer = next(e for e in EXPECTED if "supersedes" in e)
    older = EXPECTED[newer["supersedes"]]
    _, report = import_into(runtime, "mcp-memory-service", DB)
    assert report.edges == 1
    walked = runtime.memory.why(newer["content"], max_hops=1)
    assert walked.nodes[0].content == newer["content"]
    assert older["content"] in {n.content for n in walked.nodes}
    assert [e.relation for e in walked.edges] == ["supersedes"]


def test_a_folder_holding_the_database_is_read_as_the_database(runtime) -> None:
    _, report = import_into(runtime, "mcp-memory-service", FOLDER)
    assert report.facts == sum(1 for e in EXPECTED if not e["deleted"])


def test_a_second_run_imports_nothing(runtime) -> None:
    _, first = import_into(runtime, "mcp-memory-service", DB)
    before = store_counts(runtime)
    _, again = import_into(runtime, "mcp-memory-service", DB)
    assert (again.facts, again.entities, again.edges) == (0, 0, 0)
    assert again.unchanged == first.facts + first.edges
    assert store_counts(runtime) == before


def test_the_source_database_is_left_unchanged(runtime, tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    before = copy.read_bytes()
    import_into(runtime, "mcp-memory-service", copy)
    assert copy.read_bytes() == before
    assert sorted(p.name for p in copy.parent.iterdir()) == ["sqlite_vec.db"]


def test_a_truncated_database_is_refused_whole(runtime, tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    data = copy.read_bytes()
    copy.write_bytes(data[: len(data) // 3])
    with pytest.raises(CorruptInput, match=r"^sqlite_vec\.db: .*nothing was imported"):
        import_into(runtime, "mcp-memory-service", copy)
    assert store_counts(runtime) == (0, 0)


def test_a_file_that_is_not_sqlite_is_refused(runtime, tmp_path: Path) -> None:
    junk = tmp_path / "sqlite_vec.db"
    junk.write_bytes(b"this is not a database\n" * 400)
    with pytest.raises(CorruptInput, match=r"sqlite_vec\.db: .*not a .*database"):
        import_into(runtime, "mcp-memory-service", junk)
    assert store_counts(runtime) == (0, 0)


def test_a_row_with_broken_metadata_refuses_the_file_naming_the_row(runtime,
                                                                    tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    with sqlite3.connect(copy) as conn:
        conn.execute("update memories set metadata = '{\"cut\": ' where id = 3")
    conn.close()
    with pytest.raises(CorruptInput,
                       match=r"sqlite_vec\.db table memories row 3: metadata is not JSON"):
        import_into(runtime, "mcp-memory-service", copy)
    assert store_counts(runtime) == (0, 0)


def test_a_sqlite_file_of_another_program_is_refused(runtime, tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table notes (id integer primary key, body text)")
    conn.close()
    with pytest.raises(CorruptInput, match=r"notes\.db: has no memories table"):
        import_into(runtime, "mcp-memory-service", other)
    assert store_counts(runtime) == (0, 0)


def test_associations_of_its_memory_graph_become_typed_edges(runtime, tmp_path: Path) -> None:
    """The fixture's graph is empty (the server found no association); one added in the
    server's own schema is carried as an edge of its relationship type."""
    copy = _copy(tmp_path)
    a, b = EXPECTED[3]["content"], EXPECTED[2]["content"]
    rows = _rows()
    with sqlite3.connect(copy) as conn:
        conn.execute("insert into memory_graph (source_hash, target_hash, similarity, "
                     "connection_types, metadata, created_at, relationship_type) "
                     "values (?, ?, 0.5, '[\"causal\"]', '{}', 0, 'causes')",
                     (rows[a][1], rows[b][1]))
    conn.close()
    import_into(runtime, "mcp-memory-service", copy)
    walked = runtime.memory.why(a, max_hops=1)
    assert b in {n.content for n in walked.nodes}
    assert "causes" in {e.relation for e in walked.edges}

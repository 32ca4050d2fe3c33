"""Import from @modelcontextprotocol/server-memory: its real JSONL file (tests/fixtures/import/
server-memory, written by the server itself) into a real store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import velesmem
from tests.support.importing import FIXTURES, import_into, store_counts, stored_facts
from velesmem.importers import CorruptInput

FILE = FIXTURES / "server-memory" / "memory.jsonl"


def _fixture() -> tuple[list[dict], list[dict]]:
    lines = [json.loads(x) for x in FILE.read_text(encoding="utf-8").splitlines() if x.strip()]
    return ([x for x in lines if x["type"] == "entity"],
            [x for x in lines if x["type"] == "relation"])


@pytest.fixture
def runtime(tmp_path: Path):
    with velesmem.open(tmp_path / "store", embedder="hash") as rt:
        yield rt


def test_every_observation_arrives_once_with_its_entity(runtime) -> None:
    entities, _ = _fixture()
    expected = {o: e for e in entities for o in e["observations"]}
    _, report = import_into(runtime, "server-memory", FILE)
    facts = stored_facts(runtime)
    assert sorted(f["content"] for f in facts) == sorted(expected)
    assert report.facts == len(expected) and report.entities == len(entities)
    for f in facts:
        entity = expected[f["content"]]
        assert f["metadata"]["entity"] == entity["name"]
        assert f["metadata"]["entity_type"] == entity["entityType"]
        assert f["metadata"]["imported_from"] == "server-memory"
        assert isinstance(f["metadata"]["_veles_date"], int)


def test_relations_become_typed_edges_between_entity_hubs(runtime) -> None:
    _, relations = _fixture()
    import_into(runtime, "server-memory", FILE)
    for r in relations:
        found = runtime.memory.entity(r["from"])
        assert found.found
        assert {"predicate": r["relationType"], "target": r["to"].lower()}.items() <= next(
            x for x in found.relations if x["predicate"] == r["relationType"]).items()
    theo = runtime.memory.entity("Théo Durand")
    assert theo.attributes["entity_type"] == "person"


def test_why_walks_from_an_observation_to_its_entity_and_the_entities_it_relates_to(
        runtime) -> None:
    import_into(runtime, "server-memory", FILE)
    walked = runtime.memory.why("Alice leads the payments team", max_hops=2)
    reached = {n.content for n in walked.nodes}
    assert walked.nodes[0].content == "Alice leads the payments team"
    assert "Alice reviews every schema migration" in reached  # same entity
    assert "The payments team deploys on Tuesdays" in reached  # Alice leads Payments Team
    assert any("leads" in e.relation for e in walked.edges)
    deeper = {n.content for n in runtime.memory.why("Alice leads the payments team",
                                                    max_hops=3).nodes}
    assert "The ledger service stores balances in PostgreSQL 16" in deeper  # team owns ledger


def test_a_second_run_imports_nothing(runtime) -> None:
    _, first = import_into(runtime, "server-memory", FILE)
    before = store_counts(runtime)
    _, again = import_into(runtime, "server-memory", FILE)
    assert (again.facts, again.entities, again.edges) == (0, 0, 0)
    assert again.unchanged == first.facts + first.entities + first.edges
    assert store_counts(runtime) == before


def test_a_fact_the_user_already_had_is_left_as_it_was(runtime) -> None:
    mine = runtime.memory.remember("Kafka runs 9 brokers in production",
                                   metadata={"project": "infra"})
    import_into(runtime, "server-memory", FILE)
    kept = [f for f in stored_facts(runtime) if f["id"] == mine.id]
    assert kept[0]["metadata"]["project"] == "infra"
    assert "imported_from" not in kept[0]["metadata"]


def test_a_corrupt_line_refuses_the_whole_file_naming_the_line(runtime, tmp_path: Path) -> None:
    broken = tmp_path / "memory.jsonl"
    lines = FILE.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-5]  # cut short: no longer JSON
    broken.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CorruptInput, match=r"memory\.jsonl:3: not JSON") as caught:
        import_into(runtime, "server-memory", broken)
    assert "nothing was imported" in caught.value.message
    assert store_counts(runtime) == (0, 0)


@pytest.mark.parametrize("line, problem", [
    ('{"type":"entity","name":"x","entityType":"t","observations":"one"}', "list of strings"),
    ('{"type":"relation","from":"a","relationType":"r"}', "'to' must be a string"),
    ('{"type":"note","text":"x"}', "type must be 'entity' or 'relation'"),
    ('["entity"]', "not a JSON object"),
])
def test_a_line_that_is_not_server_memorys_shape_is_refused(runtime, tmp_path: Path, line: str,
                                                            problem: str) -> None:
    broken = tmp_path / "memory.jsonl"
    shutil.copyfile(FILE, broken)
    with broken.open("a", encoding="utf-8") as fh:
        fh.write("\n" + line + "\n")
    n = len(FILE.read_text(encoding="utf-8").splitlines()) + 1
    with pytest.raises(CorruptInput, match=rf"memory\.jsonl:{n}: .*{problem}"):
        import_into(runtime, "server-memory", broken)
    assert store_counts(runtime) == (0, 0)


def test_memory_status_counts_the_facts_of_each_source(runtime) -> None:
    runtime.memory.remember("a fact remembered by hand")
    assert "imported" not in runtime.memory.memory_status().memory
    import_into(runtime, "server-memory", FILE)
    import_into(runtime, "claude-code", FIXTURES / "claude-code")
    imported = runtime.memory.memory_status().memory["imported"]
    assert imported == {"claude-code": 17, "server-memory": 8}

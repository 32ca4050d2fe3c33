"""Import from mem0: the JSON that mem0ai 2.2.1's ``Memory.get_all`` returned for a real store
(tests/fixtures/import/mem0/get_all.json), and OpenMemory's backup ``memories.json`` (written
from its documented format, see the fixture's VERSIONS.md), into a real store."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import velesmem
from tests.support.importing import FIXTURES, import_into, store_counts, stored_facts
from velesmem.importers import CorruptInput

FOLDER = FIXTURES / "mem0"
GET_ALL = FOLDER / "get_all.json"
OPENMEMORY = FOLDER / "openmemory" / "memories.json"
EXPECTED = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))
EXPORTED = json.loads(GET_ALL.read_text(encoding="utf-8"))["results"]


@pytest.fixture
def runtime(tmp_path: Path):
    with velesmem.open(tmp_path / "store", embedder="hash") as rt:
        yield rt


def test_every_exported_memory_arrives_once_with_its_ids_metadata_and_times(runtime) -> None:
    kept = [e for e in EXPECTED if not e["deleted"]]
    _, report = import_into(runtime, "mem0", GET_ALL)
    facts = {f["content"]: f for f in stored_facts(runtime)}
    assert sorted(facts) == sorted(e["text"] for e in kept)
    assert report.facts == len(kept)
    by_text = {item["memory"]: item for item in EXPORTED}
    for e in kept:
        meta = facts[e["text"]]["metadata"]
        item = by_text[e["text"]]
        assert e["metadata"].items() <= meta.items()
        for name in ("user_id", "agent_id", "run_id"):
            assert meta.get(name) == e[name]
        assert meta["mem0_id"] == item["id"] and meta["hash"] == item["hash"]
        assert (meta["created_at"], meta["updated_at"]) == (item["created_at"],
                                                            item["updated_at"])
        created = dt.datetime.fromisoformat(item["created_at"])
        assert meta["_veles_date"] == int(created.strftime("%Y%m%d"))
        assert meta["imported_from"] == "mem0"
    assert next(e for e in EXPECTED if e["deleted"])["text"] not in facts


def test_users_and_agents_become_entity_hubs_that_why_walks(runtime) -> None:
    _, report = import_into(runtime, "mem0", GET_ALL)
    assert report.entities == len({i[k] for i in EXPORTED for k in ("user_id", "agent_id")
                                   if i.get(k)})
    alice = runtime.memory.entity("alice")
    assert alice.found and alice.attributes["mem0"] == "user"
    walked = runtime.memory.why("Alice is vegetarian and allergic to peanuts.", max_hops=1)
    reached = {n.content for n in walked.nodes}
    assert "Alice prefers aisle seats on flights longer than three hours." in reached
    assert "Bob uses" not in " ".join(reached)
    assert any(e.relation == "via alice" for e in walked.edges)
    bot = runtime.memory.why("The build bot retries flaky integration tests twice before "
                             "failing.", max_hops=1)
    assert "Bob deploys on Fridays only after the canary passes." in {
        n.content for n in bot.nodes}


def test_a_second_run_imports_nothing(runtime) -> None:
    _, first = import_into(runtime, "mem0", GET_ALL)
    before = store_counts(runtime)
    _, again = import_into(runtime, "mem0", GET_ALL)
    assert (again.facts, again.entities, again.edges) == (0, 0, 0)
    assert again.unchanged == first.facts + first.entities + first.edges
    assert store_counts(runtime) == before


def test_a_bare_list_of_memories_is_read_as_the_export(runtime, tmp_path: Path) -> None:
    bare = tmp_path / "memories.json"
    bare.write_text(json.dumps(EXPORTED), encoding="utf-8")
    _, report = import_into(runtime, "mem0", bare)
    assert report.facts == len(EXPORTED)


def test_openmemorys_backup_arrives_with_categories_app_and_state(runtime) -> None:
    doc = json.loads(OPENMEMORY.read_text(encoding="utf-8"))
    categories = {c["id"]: c["name"] for c in doc["categories"]}
    live = [m for m in doc["memories"] if m["state"] != "deleted"]
    plan, report = import_into(runtime, "mem0", OPENMEMORY)
    facts = {f["content"]: f for f in stored_facts(runtime)}
    assert sorted(facts) == sorted(m["content"] for m in live)
    assert report.facts == len(live) and report.entities == 1
    for m in live:
        meta = facts[m["content"]]["metadata"]
        assert meta["state"] == m["state"]
        assert meta["categories"] == [categories[c] for c in m["category_ids"]]
        assert meta["app"] == "claude" and meta["user_id"] == "alice"
        assert m["metadata"].items() <= meta.items()
    assert [s.reason for s in plan.skipped] == ["deleted in OpenMemory (state 'deleted')"]


def test_a_broken_json_file_is_refused_naming_the_line(runtime, tmp_path: Path) -> None:
    broken = tmp_path / "get_all.json"
    text = GET_ALL.read_text(encoding="utf-8")
    broken.write_text(text[: len(text) // 2], encoding="utf-8")
    line = text[: len(text) // 2].count("\n") + 1
    with pytest.raises(CorruptInput, match=rf"^get_all\.json:{line}: not JSON") as caught:
        import_into(runtime, "mem0", broken)
    assert "nothing was imported" in caught.value.message
    assert store_counts(runtime) == (0, 0)


@pytest.mark.parametrize("change, problem", [
    (lambda item: item.pop("memory"), r"results\[2\] \(id [-0-9a-f]+\): 'memory' must be a "
                                      r"string"),
    (lambda item: item.update(created_at="yesterday"), r"results\[2\] .*created_at is not an "
                                                        r"ISO time"),
    (lambda item: item.update(metadata=["x"]), r"results\[2\] .*'metadata' must be an object"),
])
def test_an_item_that_is_not_a_mem0_memory_refuses_the_file_naming_it(
        runtime, tmp_path: Path, change, problem: str) -> None:
    items = json.loads(json.dumps(EXPORTED))
    change(items[2])
    broken = tmp_path / "get_all.json"
    broken.write_text(json.dumps({"results": items}), encoding="utf-8")
    with pytest.raises(CorruptInput, match=problem):
        import_into(runtime, "mem0", broken)
    assert store_counts(runtime) == (0, 0)


def test_json_of_another_shape_is_refused(runtime, tmp_path: Path) -> None:
    other = tmp_path / "export.json"
    other.write_text('{"memories_v9": []}', encoding="utf-8")
    with pytest.raises(CorruptInput, match=r"export\.json: not a mem0 export"):
        import_into(runtime, "mem0", other)
    assert store_counts(runtime) == (0, 0)

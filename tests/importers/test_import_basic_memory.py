"""Import from basic-memory: the Markdown notes basic-memory 0.24.1 wrote itself
(tests/fixtures/import/basic-memory/notes), compared with what basic-memory's own parser indexed
from them (expected.json), into a real store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import velesmem
from tests.support.importing import FIXTURES, import_into, store_counts, stored_facts
from velesmem.importers import CorruptInput

FOLDER = FIXTURES / "basic-memory"
NOTES = FOLDER / "notes"
EXPECTED = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))
# prose outside observations and relations, one fact per section (basic-memory indexes none)
SECTIONS = {"Full-text first, vectors second.": "specs/Search Design.md",
            "See also [[Storage Layer]] for where the postings live.": "research/Ranking Notes.md"}


def _title(file: str) -> str:
    return Path(file).stem


@pytest.fixture
def runtime(tmp_path: Path):
    with velesmem.open(tmp_path / "store", embedder="hash") as rt:
        yield rt


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    copy = tmp_path / "notes"
    shutil.copytree(NOTES, copy)
    return copy


def test_every_observation_arrives_once_as_basic_memory_parses_it(runtime) -> None:
    observations = EXPECTED["observations"]
    _, report = import_into(runtime, "basic-memory", NOTES)
    facts = {f["content"]: f for f in stored_facts(runtime)}
    assert sorted(facts) == sorted([o["content"] for o in observations] + list(SECTIONS))
    assert report.facts == len(observations) + len(SECTIONS)
    assert report.entities == len(EXPECTED["notes"])
    for o in observations:
        meta = facts[o["content"]]["metadata"]
        assert (meta["category"], meta["tags"], meta.get("context")) == (
            o["category"], o["tags"] or [], o["context"])
        assert (meta["file"], meta["note"]) == (o["note"], _title(o["note"]))
        assert meta["imported_from"] == "basic-memory"
        assert isinstance(meta["_veles_date"], int)
    for text, file in SECTIONS.items():
        meta = facts[text]["metadata"]
        assert (meta["kind"], meta["file"], meta["section"]) == ("section", file, _title(file))


def test_frontmatter_travels_as_metadata_of_the_notes_facts(runtime) -> None:
    import_into(runtime, "basic-memory", NOTES)
    facts = {f["content"]: f["metadata"] for f in stored_facts(runtime)}
    design = facts["Stopword lists differ per language #i18n"]
    assert (design["status"], design["owner"], design["type"]) == ("accepted", "ana", "spec")
    assert design["note_tags"] == ["search", "architecture"]
    assert design["permalink"] == "fixture/specs/search-design"
    storage = facts["Group commit batches writes from many clients"]
    assert (storage["reviewed"], storage["version"]) == (True, 3)
    meeting = runtime.memory.entity("Meeting 2026-11-30")
    assert meeting.attributes["attendees"] == ["ana", "li"]


def test_relations_and_wiki_links_become_typed_edges_between_the_notes(runtime) -> None:
    _, report = import_into(runtime, "basic-memory", NOTES)
    for r in EXPECTED["relations"]:
        found = runtime.memory.entity(_title(r["from"]))
        assert found.found
        assert {"predicate": r["type"], "target": _title(r["to_note"]).lower()}.items() <= next(
            x for x in found.relations if x["predicate"] == r["type"]).items()
    hub_edges = len(EXPECTED["relations"])
    assert report.edges == 2 * report.facts + hub_edges  # about + mentions per fact


def test_why_walks_from_an_observation_to_the_notes_its_note_relates_to(runtime) -> None:
    import_into(runtime, "basic-memory", NOTES)
    walked = runtime.memory.why("Lexical search answers before the model is warm", max_hops=1)
    reached = {n.content for n in walked.nodes}
    assert walked.nodes[0].content.startswith("Lexical search answers")
    assert "Stopword lists differ per language #i18n" in reached  # same note
    assert any(c.startswith("Naive RRF") for c in reached)  # implements [[Ranking Notes]]
    assert any(c.startswith("SQLite is the source of truth") for c in reached)  # depends_on
    assert any("implements" in e.relation for e in walked.edges)


def test_a_second_run_imports_nothing(runtime) -> None:
    _, first = import_into(runtime, "basic-memory", NOTES)
    before = store_counts(runtime)
    _, again = import_into(runtime, "basic-memory", NOTES)
    assert (again.facts, again.entities, again.edges) == (0, 0, 0)
    assert again.unchanged == first.facts + first.entities + first.edges
    assert store_counts(runtime) == before


def test_a_link_to_a_note_the_folder_lacks_still_gets_a_hub(runtime, notes: Path) -> None:
    (notes / "extra.md").write_text("# Extra\n\n- [idea] Read the paper on BM25F #reading\n"
                                    "- cites [[Nowhere Paper]]\n", encoding="utf-8")
    plan, _ = import_into(runtime, "basic-memory", notes)
    assert plan.skipped == []
    extra = runtime.memory.entity("extra")
    assert {"predicate": "cites", "target": "nowhere paper"}.items() <= extra.relations[0].items()


def test_a_single_note_file_is_read_as_a_folder_of_one(runtime) -> None:
    _, report = import_into(runtime, "basic-memory", NOTES / "specs" / "Storage Layer.md")
    assert report.facts == sum(1 for o in EXPECTED["observations"]
                               if o["note"] == "specs/Storage Layer.md")


def test_a_bad_frontmatter_refuses_the_whole_folder_naming_file_and_line(
        runtime, notes: Path) -> None:
    note = notes / "specs" / "Storage Layer.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("version: 3", "version: [3, 4"), encoding="utf-8")
    line = text.splitlines().index("version: 3") + 1
    with pytest.raises(CorruptInput, match=r"^specs/Storage Layer\.md:\d+: frontmatter is not "
                                           r"YAML") as caught:
        import_into(runtime, "basic-memory", notes)
    assert int(caught.value.where.rsplit(":", 1)[1]) >= line
    assert "nothing was imported" in caught.value.message
    assert store_counts(runtime) == (0, 0)


@pytest.mark.parametrize("content, where, problem", [
    ("---\ntitle: Open\n\n# Open\n- [x] never closed\n", "open.md:1", "never closed"),
    ("---\n- a\n- b\n---\n# List\n", "open.md:2", "not a mapping"),
    (b"# Latin-1\n\n- [fact] caf\xe9 #food\n", "open.md:3", "not UTF-8"),
])
def test_a_note_that_is_not_basic_memorys_format_is_refused(
        runtime, notes: Path, content: str | bytes, where: str, problem: str) -> None:
    target = notes / "open.md"
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    with pytest.raises(CorruptInput, match=rf"^{where}: .*{problem}"):
        import_into(runtime, "basic-memory", notes)
    assert store_counts(runtime) == (0, 0)

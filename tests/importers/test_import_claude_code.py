"""Import Claude Code's memory (CLAUDE.md files, rules, auto-memory notes) from the hand-made
fixture in tests/fixtures/import/claude-code (its NOTE.md says how it was made)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import velesmem
from tests.support.importing import FIXTURES, import_into, store_counts, stored_facts
from velesmem.importers import CorruptInput

ROOT = FIXTURES / "claude-code"
MEMORY = "home/.claude/projects/-work-payments/memory"
EXPECTED = {
    "Answer in British English": ("home/.claude/CLAUDE.md", "Personal preferences"),
    "Show diffs before committing": ("home/.claude/CLAUDE.md", "Personal preferences"),
    "The payments service settles card transactions and owns the ledger.":
        ("project/CLAUDE.md", "Payments service"),
    "Run `make build` before opening a pull request":
        ("project/CLAUDE.md", "Payments service > Build"),
    "Use pnpm, never npm, for the web client (the lockfile is pnpm-lock.yaml)":
        ("project/CLAUDE.md", "Payments service > Build"),
    "Unit tests: `make test`": ("project/CLAUDE.md", "Payments service > Build > Tests"),
    "Integration tests need Docker running":
        ("project/CLAUDE.md", "Payments service > Build > Tests"),
    "make test-integration PARALLEL=4": ("project/CLAUDE.md", "Payments service > Build > Tests"),
    "Python code is formatted with ruff format": ("project/CLAUDE.md", "Payments service > Style"),
    "Prefer dataclasses to dicts for internal records":
        ("project/CLAUDE.md", "Payments service > Style"),
    "Never mock the database in integration tests":
        ("project/.claude/rules/testing.md", "Testing rules"),
    "Name each test for the behaviour it checks":
        ("project/.claude/rules/testing.md", "Testing rules"),
    "The on-call rotation changes every Monday at 09:00 UTC": (f"{MEMORY}/MEMORY.md", None),
}
NOTES = {  # note file -> (start of its fact, type)
    "user_prefers_pnpm.md": ("The user uses pnpm for every JavaScript project", "user"),
    "feedback_no_db_mocks.md": ("Integration tests must run against a real PostgreSQL", "feedback"),
    "project_ledger_freeze.md": ("No merges touch the ledger service", "project"),
    "reference_grafana.md": ("Ledger p99 latency is on the Grafana board", "reference"),
}


@pytest.fixture
def runtime(tmp_path: Path):
    with velesmem.open(tmp_path / "store", embedder="hash") as rt:
        yield rt


def test_every_bullet_paragraph_and_note_arrives_once_with_file_and_section(runtime) -> None:
    checked, report = import_into(runtime, "claude-code", ROOT)
    facts = stored_facts(runtime)
    contents = [f["content"] for f in facts]
    assert len(contents) == len(set(contents)) == len(EXPECTED) + len(NOTES) == report.facts
    by_text = {f["content"]: f["metadata"] for f in facts}
    for text, (file, section) in EXPECTED.items():
        assert by_text[text]["file"] == file
        assert by_text[text].get("section") == section
        assert by_text[text]["imported_from"] == "claude-code"
    for file, (start, kind) in NOTES.items():
        meta = next(m for t, m in by_text.items() if t.startswith(start))
        assert (meta["file"], meta["memory_type"]) == (f"{MEMORY}/{file}", kind)
        assert meta["claude_project"] == "-work-payments" and meta["description"]
    assert [s.where for s in checked.skipped] == ["project/CLAUDE.md:3"]  # the @import line


def test_a_note_keeps_its_index_title_body_lines_and_modified_date(runtime) -> None:
    import_into(runtime, "claude-code", ROOT)
    freeze = next(f for f in stored_facts(runtime)
                  if f["content"].startswith("No merges touch the ledger service"))
    assert "**Why:** the auditors compare" in freeze["content"]
    assert "**How to apply:**" in freeze["content"]
    assert freeze["metadata"]["title"] == "Ledger freeze"
    assert freeze["metadata"]["memory_name"] == "project-ledger-freeze"
    assert freeze["metadata"]["_veles_date"] == 20261120


def test_wiki_links_between_notes_become_edges_that_why_walks(runtime) -> None:
    import_into(runtime, "claude-code", ROOT)
    walked = runtime.memory.why("Integration tests must run against a real PostgreSQL database",
                                max_hops=2)
    assert walked.nodes[0].content.startswith("Integration tests must run against a real")
    def hop(start: str) -> int:
        return next(n.hop for n in walked.nodes if n.content.startswith(start))

    assert hop("No merges touch the ledger service") == 1
    assert hop("Ledger p99 latency is on the Grafana board") == 2
    assert {e.relation for e in walked.edges} == {"related_to"}


def test_a_second_run_imports_nothing(runtime) -> None:
    import_into(runtime, "claude-code", ROOT)
    before = store_counts(runtime)
    _, again = import_into(runtime, "claude-code", ROOT)
    assert (again.facts, again.entities, again.edges) == (0, 0, 0)
    assert store_counts(runtime) == before


def test_one_claude_md_file_alone_is_read(runtime) -> None:
    _, report = import_into(runtime, "claude-code", ROOT / "home" / ".claude" / "CLAUDE.md")
    assert report.facts == 2


def test_an_unclosed_frontmatter_refuses_the_whole_import_naming_the_file(
        runtime, tmp_path: Path) -> None:
    copy = tmp_path / "claude"
    shutil.copytree(ROOT, copy)
    note = copy / MEMORY / "reference_grafana.md"
    note.write_text(note.read_text(encoding="utf-8").replace("---\n\nLedger", "\nLedger"),
                    encoding="utf-8")
    with pytest.raises(CorruptInput, match=rf"{MEMORY}/reference_grafana.md:1: frontmatter is "
                                           "opened by '---' and never closed"):
        import_into(runtime, "claude-code", copy)
    assert store_counts(runtime) == (0, 0)


def test_a_file_that_is_not_utf8_is_refused_naming_its_line(runtime, tmp_path: Path) -> None:
    copy = tmp_path / "claude"
    shutil.copytree(ROOT, copy)
    rules = copy / "project" / ".claude" / "rules" / "testing.md"
    rules.write_bytes(rules.read_bytes() + b"- caf\xe9 au lait\n")
    with pytest.raises(CorruptInput, match=r"project/\.claude/rules/testing\.md:5: not UTF-8"):
        import_into(runtime, "claude-code", copy)
    assert store_counts(runtime) == (0, 0)

"""The identifier forms real projects write — zero-padded ADR/RFC/ticket keys, ``#123``,
``GH-123``, commit SHAs, release tags and semver, file paths, URLs — found in realistic text,
every spelling of one identifier meeting at one hub, and ``why`` linking two facts that cite the
same ADR."""

from __future__ import annotations

from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.extract import find_identifiers
from velesmem.runtime import Runtime


def names(text: str) -> set[tuple[str, str]]:
    return {(i.kind, i.canonical) for i in find_identifiers(text)}


@pytest.mark.parametrize(("text", "expected"), [
    ("Per ADR-014 we keep SQLite as the source of truth and FAISS as a derived index.",
     {("ticket", "adr-14")}),
    ("ADR 014 (docs/adr/0014-sqlite-truth.md) supersedes ADR-9.",
     {("ticket", "adr-14"), ("ticket", "adr-9"), ("path", "docs/adr/0014-sqlite-truth.md"),
      ("path", "0014-sqlite-truth.md")}),
    ("The proxy follows RFC-007 internally and RFC 9110 on the wire; see also RFC7231.",
     {("ticket", "rfc-7"), ("ticket", "rfc-9110"), ("ticket", "rfc-7231")}),
    ("Blocked by JIRA-0042 until the vendor ships a fix; OPS-007 tracks the rollout.",
     {("ticket", "jira-42"), ("ticket", "ops-7")}),
    ("Fixed in #123, backported as gh-1234 (CPython style) and GH-99.",
     {("issue", "#123"), ("issue", "#1234"), ("issue", "#99")}),
    ("Reverted 3f2a9c1 (bad merge); the fix is 9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807.",
     {("commit", "3f2a9c1"), ("commit", "9e8d7c6")}),
    ("We tagged v1.4.0 yesterday; 1.5.0-rc.1 ships next week and v2.0.0-beta.3+build.7 after.",
     {("version", "v1.4.0"), ("version", "v1.5.0-rc.1"), ("version", "v2.0.0-beta.3+build.7")}),
    ("Bumped to v0.12.3.", {("version", "v0.12.3")}),
    ("The crash is in velesmem/store/sqlite/writer.py:212, logged to ~/.local/state/velesmem.log",
     {("path", "velesmem/store/sqlite/writer.py"), ("path", "writer.py"),
      ("path", "~/.local/state/velesmem.log"), ("path", "velesmem.log")}),
    ("Details at https://github.com/velesdb/velesmem/issues/24#issuecomment-9.",
     {("url", "https://github.com/velesdb/velesmem/issues/24"), ("issue", "velesdb/velesmem#24")}),
])
def test_the_forms_real_projects_write_are_found_in_realistic_text(
        text: str, expected: set[tuple[str, str]]) -> None:
    assert expected <= names(text), names(text)


@pytest.mark.parametrize("forms", [
    ["ADR-014", "ADR 14", "ADR-14", "adr decision ADR 0014"],
    ["RFC-007", "RFC 7", "RFC7"],
    ["JIRA-0042", "JIRA-42"],
    ["#123", "GH-123", "gh-123", "PR #123"],
    ["tagged v1.4.0", "release v1.4.0.", "(v1.4.0)"],
])
def test_every_spelling_of_one_identifier_names_one_hub(forms: list[str]) -> None:
    hubs = [{i.canonical for i in find_identifiers(f)} for f in forms]
    assert set.intersection(*hubs), hubs


@pytest.mark.parametrize("text", [
    "ABC-000 is a placeholder", "the v2 API", "Section 1.2.3", "released 2024.01.15",
    "at 10.0.0.1", "v1.2.3.4.5", "python3.11", "UTF-8 and ISO-8601",
])
def test_numbers_that_only_look_like_these_forms_are_not_identifiers(text: str) -> None:
    kinds = {kind for kind, _ in names(text)}
    assert not kinds & {"ticket", "version", "issue"}, names(text)


def test_a_tag_after_a_verb_is_a_tag_not_a_package_named_after_the_verb() -> None:
    assert names("we tagged v1.4.0 and shipped v1.4.1") == {("version", "v1.4.0"),
                                                          ("version", "v1.4.1")}
    assert ("version", "tokio 1.35.1") in names("tokio v1.35.1")  # a name before it still counts


def test_why_links_two_facts_that_cite_adr_014(tmp_path: Path) -> None:
    with Runtime.open(Settings(path=tmp_path, embedder="hash")) as rt:
        rt.wait_ready_sync(30)
        m = rt.memory
        decision = m.remember("ADR-014: SQLite stays the source of truth; the FAISS index is derived")
        later = m.remember("Rebuilt the vector index after the crash, as ADR 14 allows")
        m.remember("lunch menu: pasta on friday")
        assert rt.autograph.wait_idle(30)
        why = m.why("why is SQLite the source of truth", max_hops=2)
        hops = {n.id: n.hop for n in why.nodes}
        assert hops[decision.id] == 0 and hops[later.id] == 1
        relations = {(e.from_, e.to): e.relation for e in why.edges}
        assert relations[(decision.id, later.id)] == "via adr-14"
        assert "lunch" not in " ".join(n.content for n in why.nodes)
        assert m.entity("ADR-14").found  # the hub is named without the padding
        padded = m.entity("ADR-014")  # and found by the spelling the fact used
        assert padded.found and padded.name == "adr-14"
        assert not m.entity("lunch menu").found

"""The offline identifier finder: what each kind takes and refuses, canonical forms, idf floor."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.bounds import timed
from velesmem import limits
from velesmem.extract import (
    KINDS,
    Identifier,
    canonical_name,
    find_identifiers,
    hub_worthy,
    identifier_idf,
    too_common,
)


def found(text: str) -> list[tuple[str, str]]:
    return [(i.kind, i.canonical) for i in find_identifiers(text)]


POSITIVE = [
    # tickets
    ("Fixed EPIC-317 today", [("ticket", "epic-317")]),
    ("see JIRA-12.", [("ticket", "jira-12")]),
    ("(ABC2-9)", [("ticket", "abc2-9")]),
    ("**OPS-77**: done", [("ticket", "ops-77")]),
    ("CVE-2024-12345 patched", [("ticket", "cve-2024-12345")]),
    # issues, pull and merge requests
    ("closes #123", [("issue", "#123")]),
    ("in PR #42,", [("issue", "#42")]),
    ("pr#42", [("issue", "#42")]),
    ("PR 42 and PR-43", [("issue", "#42"), ("issue", "#43")]),
    ("pull request #7", [("issue", "#7")]),
    ("Issue 77", [("issue", "#77")]),
    ("merged !17", [("issue", "!17")]),
    ("MR !5 and MR 6", [("issue", "!5"), ("issue", "!6")]),
    ("velesdb/velesmem#42", [("issue", "velesdb/velesmem#42")]),
    ("group/proj!3", [("issue", "group/proj!3")]),
    # commits
    ("commit a1b2c3d", [("commit", "a1b2c3d")]),
    ("at A1B2C3D4E5", [("commit", "a1b2c3d")]),
    ("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 merged", [("commit", "a1b2c3d")]),
    # URLs (fragment, trailing punctuation and closing bracket dropped; forge items derived)
    ("https://github.com/o/r/pull/42#issuecomment-1.",
     [("url", "https://github.com/o/r/pull/42"), ("issue", "o/r#42")]),
    ("(see https://Example.COM:443/a/b/)", [("url", "https://example.com/a/b")]),
    ("https://en.wikipedia.org/wiki/Foo_(bar)", [("url", "https://en.wikipedia.org/wiki/foo_(bar)")]),
    ("https://gitlab.com/g/sub/r/-/merge_requests/9",
     [("url", "https://gitlab.com/g/sub/r/-/merge_requests/9"), ("issue", "g/sub/r!9")]),
    ("https://github.com/o/r/commit/abc1234def",
     [("url", "https://github.com/o/r/commit/abc1234def"), ("commit", "abc1234")]),
    ("http://user:pw@host.local:8080/x?q=1", [("url", "http://host.local:8080/x?q=1")]),
    # paths (a file inside a directory also yields its file name)
    ("edit src/velesmem/extract/outline.py:12",
     [("path", "src/velesmem/extract/outline.py"), ("path", "outline.py")]),
    ("run ./scripts/run.sh now", [("path", "scripts/run.sh"), ("path", "run.sh")]),
    ("in ~/.config", [("path", "~/.config")]),
    ("read /etc/hosts.", [("path", "/etc/hosts")]),
    ("C:\\Users\\me\\notes.txt", [("path", "c:/users/me/notes.txt"), ("path", "notes.txt")]),
    ("config.py and README.md", [("path", "config.py"), ("path", "readme.md")]),
    ("the Makefile and .gitignore", [("path", "makefile"), ("path", ".gitignore")]),
    ("under docs/guide/", [("path", "docs/guide")]),
    ("#!/bin/bash", [("path", "/bin/bash")]),
    ("tests/extract/chat_server", [("path", "tests/extract/chat_server")]),
    # names with a version (the bare name too)
    ("We picked parking_lot 0.12 for speed",
     [("version", "parking_lot 0.12"), ("package", "parking_lot")]),
    ("numpy==1.26", [("version", "numpy 1.26"), ("package", "numpy")]),
    ("faiss-cpu>=1.8", [("version", "faiss-cpu 1.8"), ("package", "faiss-cpu")]),
    ("react@18.2.0", [("version", "react 18.2.0"), ("package", "react")]),
    ('parking_lot = "0.12"', [("version", "parking_lot 0.12"), ("package", "parking_lot")]),
    ("Python 3.11", [("version", "python 3.11"), ("package", "python")]),
    ("tokio v1.35.1", [("version", "tokio 1.35.1"), ("package", "tokio")]),
    ("httpx 1.0.0-beta.2", [("version", "httpx 1.0.0-beta.2"), ("package", "httpx")]),
    # symbols
    ("MemoryService.open() and json.loads",
     [("symbol", "memoryservice.open"), ("symbol", "json.loads")]),
    ("HashEmbedder, iPhone, PostgreSQL, HTTPServer, S3Bucket",
     [("symbol", "hashembedder"), ("symbol", "iphone"), ("symbol", "postgresql"),
      ("symbol", "httpserver"), ("symbol", "s3bucket")]),
    ("use parking_lot", [("symbol", "parking_lot")]),
    ("MAX_FACT_BYTES and __init__", [("symbol", "max_fact_bytes"), ("symbol", "__init__")]),
    ("_parking_lot_ (emphasis)", [("symbol", "parking_lot")]),
    ("std::sync::Mutex", [("symbol", "std::sync::mutex")]),
    ("parking_lot::Mutex", [("symbol", "parking_lot::mutex"), ("package", "parking_lot")]),
    ("call `remember` via `mcp-remote`", [("symbol", "remember"), ("symbol", "mcp-remote")]),
    # handles and domains
    ("ping @dana and @bob-smith.", [("handle", "@dana"), ("handle", "@bob-smith")]),
    ("docs on velesdb.io and www.github.com", [("domain", "velesdb.io"), ("domain", "github.com")]),
    # unicode around and inside
    ("naïve_bayes sur EPIC-9 — café", [("symbol", "naïve_bayes"), ("ticket", "epic-9")]),
]

NEGATIVE = [
    # numbers, dates, decimals, prices, measures
    "42", "3.14", "1,000,000", "2024-05-01", "12/03/2024", "20240501", "1234567", "12:30",
    "costs 3.50", "$3.50", "it took 3.5 ms", "2.5 GB", "0.95 recall", "12.5% faster",
    "x 1.5 times", "scored 0.95", "about 0.12 seconds", "at 10.0.0.1", "host 10.0.0.1",
    # versions without a name, and versions after a counting word
    "v2", "the v2 API", "moved to v2", "Version 2.0", "Chapter 3.2", "Section 4.1",
    "released 2024.01.15", "python3.11",
    # abbreviations and prose
    "e.g. this", "i.e. that", "U.S.A.", "Ph.D.", "and/or", "w/o", "24/7", "TCP/IP",
    "client/server", "re-run the e-mail", "well-known open-source", "It is. Then",
    "Hello World", "JSON and HTML", "The PDFs and URLs and APIs",
    # standards and models that look like tickets
    "UTF-8", "SHA-256", "ISO-8601", "GPT-4", "COVID-19", "Q3-2024", "MP3", "X-1",
    # handles and hashes that are something else
    "a@b.com", "dana@example.com", "@2x", "@", "deadbeef", "defaced", "#fff", "&#123;",
    "0x1f2e3d4c", "#a1b2c3d4", "550e8400-e29b-41d4-a716-446655440000",
    "a" * 41 + "1",  # hex too long for a commit... not hex at all
    "abc123def456abc123def456abc123def456abc12",  # 41 hex digits
    # words in backticks that say nothing
    "`true` or `None`", "`x`",
    # headings and shebangs
    "# Title", "#!",
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE)
def test_identifiers_are_found_and_canonicalised(text: str,
                                                 expected: list[tuple[str, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_lookalikes_are_not_identifiers(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize("forms", [
    ["PR #42", "pr#42", "#42", "PR-42", "pull request 42", "Pull Request #042"],
    ["EPIC-317", "epic-317 is a branch? no: EPIC-317"],
    ["a1b2c3d", "a1b2c3d4e5f6", "A1B2C3D4E5F60718293A4B5C6D7E8F9012345678"],
    ["parking_lot", "parking_lot 0.12", "parking_lot==0.12.1", "parking_lot::Mutex",
     "`parking_lot`"],
    ["https://Example.com/a/", "https://example.com/a#top", "https://example.com:443/a"],
    ["./src/a.py", "src/a.py", "src/a.py:10:2", "SRC/A.PY"],
    ["@Dana", "@dana"],
])
def test_the_same_identifier_written_differently_gets_one_canonical_name(forms: list[str]) -> None:
    names = [{i.canonical for i in find_identifiers(f)} for f in forms]
    assert set.intersection(*names), names


def test_each_identifier_appears_once_first_occurrence_first_with_its_surface() -> None:
    out = find_identifiers("PR #42 fixes EPIC-317; later pr#42 again and EPIC-317")
    assert out == [Identifier("issue", "#42", "PR #42"),
                   Identifier("ticket", "epic-317", "EPIC-317")]


def test_a_claimed_stretch_is_not_matched_again() -> None:
    assert found("docs/EPIC-317.md") == [("path", "docs/epic-317.md"), ("path", "epic-317.md")]


def test_the_parking_lot_decision_meets_the_ticket_through_shared_hubs() -> None:
    question = "why did we pick parking_lot"
    decision = "Switched the cache lock to parking_lot 0.12 in PR #42: its Mutex is faster"
    fix = "PR #42 fixes EPIC-317 (lock contention under load)"
    ids = {name: {i.canonical for i in find_identifiers(t)}
           for name, t in [("q", question), ("d", decision), ("f", fix)]}
    assert ids["q"] & ids["d"] == {"parking_lot"}
    assert ids["d"] & ids["f"] == {"#42"}
    assert "epic-317" in ids["f"]


def test_an_identifier_too_long_for_a_hub_is_left_out() -> None:
    url = "https://example.com/" + "a" * limits.MAX_IDENTIFIER_BYTES
    assert found(url) == []
    assert found("https://example.com/" + "a" * 100)


def test_every_kind_is_reachable() -> None:
    kinds = {kind for text, expected in POSITIVE for kind, _ in expected}
    assert kinds == set(KINDS)


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)
_codey = st.lists(st.sampled_from(
    ["EPIC-317", "#42", "PR", " ", "/", ".", "_", "@", "!", "-", "::", "`", "v", "0.12", "1",
     "a1b2c3d", "https://", "x.py", "\\", ":", "==", "\n", "Foo", "bar", "é", "(", ")"]),
    max_size=60).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_text, _codey))
def test_the_finder_never_raises_is_deterministic_and_names_are_canonical(text: str) -> None:
    first = find_identifiers(text)
    assert find_identifiers(text) == first
    names = [i.canonical for i in first]
    assert len(names) == len(set(names))
    for ident in first:
        assert ident.kind in KINDS
        assert ident.canonical and canonical_name(ident.canonical) == ident.canonical
        assert len(ident.canonical.encode("utf-8", "surrogatepass")) <= limits.MAX_IDENTIFIER_BYTES
        assert ident.surface and ident.surface in text


@pytest.mark.parametrize("unit", ["a_", "a.", "a/", "ab::", "1.", "aB", "a1b2", "#1 ", "@a-",
                                  "x-1", "http://a", "EPIC-1", "_", "a"])
def test_no_input_makes_the_scan_slow(unit: str) -> None:
    # 256 KiB of one repeated pattern: a backtracking (quadratic) scan would take hours, and the
    # suite's timeout ends it; the seconds it takes are for bench/bounds.py
    text = unit * (limits.MAX_FACT_BYTES // 4 // len(unit))
    with timed(f"identifiers: a 256 KiB fact of {unit!r} repeated is scanned", 5.0):
        find_identifiers(text)


def test_idf_is_the_entity_idf_of_recall_fused() -> None:
    assert identifier_idf(1, 1000) == pytest.approx(1.0)
    assert identifier_idf(1000, 1000) == pytest.approx(0.0)
    assert identifier_idf(10, 1000) == pytest.approx(2 / 3)
    assert identifier_idf(0, 1000) == identifier_idf(1, 1000)  # a new identifier
    assert identifier_idf(5, 1) == 1.0


def test_too_common_cuts_below_the_floor_and_never_in_a_small_store() -> None:
    n = 10_000
    edge = int(n ** (1 - limits.MIN_IDENTIFIER_IDF))  # df where idf reaches the floor
    assert not too_common(edge, n) and too_common(edge + 2, n)
    assert not too_common(limits.IDENTIFIER_IDF_MIN_FACTS - 1, limits.IDENTIFIER_IDF_MIN_FACTS - 1)
    assert too_common(90, 100, floor=0.5, min_facts=10)


def test_hub_worthy_keeps_order_and_drops_only_the_too_common() -> None:
    ids = find_identifiers("EPIC-317 in src/a.py by @dana")
    df = {"src/a.py": 900, "a.py": 5}
    kept = hub_worthy(ids, df, total=1000)
    assert [i.canonical for i in kept] == ["epic-317", "a.py", "@dana"]

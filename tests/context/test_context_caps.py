"""A test per error type and per cap of the compiler tools."""

from __future__ import annotations

import base64

import pytest

from context_helpers import compile_, media_fragment, request

from tests.support.bounds import timed
from velesmem import limits
from velesmem.context.ingest import IngestBudget, IngestRoots, read_path
from velesmem.context.service import ContextService
from velesmem.context.store import InMemoryContextStore
from velesmem.errors import ContextOverLimit, IngestDisabled, InvalidInput, NotFound


def test_a_fragment_needs_content_path_or_media() -> None:
    with pytest.raises(InvalidInput, match="exactly one of path, non-empty content, or media"):
        compile_([{"content": ""}])
    with pytest.raises(InvalidInput, match="unknown field"):
        compile_([{"contents": "typo"}])


def test_max_fragments() -> None:
    compile_(["x"] * limits.MAX_FRAGMENTS, budget=10)
    with pytest.raises(ContextOverLimit, match="MAX_FRAGMENTS"):
        compile_(["x"] * (limits.MAX_FRAGMENTS + 1))


def test_max_token_budget_is_a_clamp_with_a_warning() -> None:
    out = compile_(["x"], budget=limits.MAX_TOKEN_BUDGET + 1)
    assert out["insights"]["token_budget"] == limits.MAX_TOKEN_BUDGET
    assert any("clamped" in w for w in out["warnings"])
    with pytest.raises(InvalidInput):
        compile_(["x"], budget=-1)


def test_max_media_b64_bytes_and_malformed_base64() -> None:
    ok = base64.b64encode(b"\0" * (limits.MAX_MEDIA_B64_BYTES // 4 * 3)).decode()
    assert len(ok) == limits.MAX_MEDIA_B64_BYTES
    compile_([media_fragment(ok)], budget=10)
    with pytest.raises(InvalidInput, match="cap is"):
        compile_([media_fragment(ok + "AAAA")])
    for bad in ("not base64!!", "QUJD=", "QUJ"):
        with pytest.raises(InvalidInput, match="not valid base64"):
            compile_([media_fragment(bad)])


def test_max_request_media_b64_bytes() -> None:
    one = "A" * limits.MAX_MEDIA_B64_BYTES
    count = limits.MAX_REQUEST_MEDIA_B64_BYTES // limits.MAX_MEDIA_B64_BYTES + 1
    with pytest.raises(ContextOverLimit, match="per request"):
        compile_([media_fragment(one) for _ in range(count)])


def test_max_metadata_bytes() -> None:
    with pytest.raises(InvalidInput, match="metadata"):
        compile_([{"content": "x", "metadata": {"k": "v" * limits.MAX_METADATA_BYTES}}])


def test_max_fragment_bytes() -> None:
    compile_(["x" * limits.MAX_FRAGMENT_BYTES], budget=10)
    with pytest.raises(ContextOverLimit, match="per fragment"):
        compile_(["x" * (limits.MAX_FRAGMENT_BYTES + 1)])


def test_max_query_bytes() -> None:
    with pytest.raises(InvalidInput, match="query"):
        compile_(["x"], query="q" * (limits.MAX_QUERY_BYTES + 1))


def test_max_ingest_request_bytes_is_a_running_total(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("a" * 100)
    roots = IngestRoots.from_settings((str(tmp_path),))
    budget = IngestBudget(max_bytes=150)
    read_path(roots, str(tmp_path / "a.txt"), budget)
    with pytest.raises(ContextOverLimit, match="MAX_TOTAL_INGEST_BYTES"):
        read_path(roots, str(tmp_path / "a.txt"), budget)
    assert limits.MAX_INGEST_REQUEST_BYTES == 64 * limits.MIB


def test_max_transcript_bytes() -> None:
    service = ContextService()
    with pytest.raises(InvalidInput, match="cap"):
        service.compile_transcript({"query": "q", "token_budget": 10, "transcript": "x" * (limits.MAX_TRANSCRIPT_BYTES + 1)})


def test_max_working_context_bytes_and_empty_refused() -> None:
    service = ContextService(InMemoryContextStore())
    with pytest.raises(InvalidInput, match="1 MiB"):
        service.save_working("p", "s", {"goal": "g" * limits.MAX_WORKING_CONTEXT_BYTES})
    with pytest.raises(InvalidInput, match="empty"):
        service.save_working("p", "s", {"goal": " ", "decisions": []})


def test_unknown_rule_ids_and_policy_fields_are_refused() -> None:
    with pytest.raises(InvalidInput, match="not a rule"):
        compile_(["x"], policy={"disabled_rules": ["preserve.nope"]})
    with pytest.raises(InvalidInput, match="not a rule"):
        compile_(["x"], policy={"disabled_rules": ["budget.externalize"]})
    with pytest.raises(InvalidInput, match="unknown field"):
        compile_(["x"], policy={"ids_as_string": True})


def test_not_found_for_an_unknown_handle_and_an_unknown_fragment_id() -> None:
    service = ContextService(InMemoryContextStore())
    with pytest.raises(NotFound):
        service.retrieve("ctx://source/123")
    with pytest.raises(InvalidInput):
        service.retrieve("ctx://other/123")
    with pytest.raises(NotFound):
        service.explain(request(["x"]), "42")
    with pytest.raises(InvalidInput, match="out of range"):
        service.explain(request(["x"]), "42", 3)


HUGE_DIGITS = "9" * 4301  # past Python's int-conversion limit (4300 digits)


def test_huge_ids_are_invalid_input_everywhere_and_never_echoed_whole() -> None:
    service = ContextService(InMemoryContextStore())
    calls = (
        lambda: service.retrieve("ctx://source/" + HUGE_DIGITS),
        lambda: service.compile_context(request([{"content": "x", "id": HUGE_DIGITS}])),
        lambda: service.explain(request(["x"]), HUGE_DIGITS),
        lambda: service.save_working("p", "s", {"decisions": [{"text": "t", "fragment_id": HUGE_DIGITS}]}),
        lambda: service.retrieve("ctx://source/x" + HUGE_DIGITS),
    )
    for call in calls:
        with pytest.raises(InvalidInput) as info:
            call()
        assert len(info.value.message) < 300
    assert service.load_working("p", "s")["found"] is False  # nothing was saved
    with pytest.raises(NotFound):  # leading zeros still name a u64
        service.retrieve("ctx://source/" + "0" * 30 + "7")


def test_ingest_disabled_without_roots() -> None:
    with pytest.raises(IngestDisabled):
        compile_([{"path": "/etc/hostname"}])


def test_max_ingest_files(tmp_path) -> None:
    (tmp_path / "f.txt").write_text("x")
    service = ContextService(roots=IngestRoots.from_settings((str(tmp_path),)))
    frags = [{"path": str(tmp_path / "f.txt")}] * limits.MAX_INGEST_FILES
    service.compile_context(request(frags))
    with pytest.raises(ContextOverLimit, match="MAX_INGEST_FILES"):
        service.compile_context(request(frags + frags[:1]))


@pytest.mark.parametrize("text", ["x" + " " * 1_000_000 + "y", "x" * 1_000_000, "a" + "\n" * 500_000 + "b",
                                  "abc " * 250_000], ids=["spaces", "one-word", "newlines", "digitless-words"])
def test_a_fragment_at_the_cap_compiles_in_linear_time(text: str) -> None:
    # quadratic regex backtracking took hours here: the suite's timeout ends that; the seconds
    # a linear pass takes are for bench/bounds.py
    with timed(f"compiler: a 1 MB fragment of {text[:3]!r}… compiles", 10.0):
        compile_([text], budget=50)

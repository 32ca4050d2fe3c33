"""compile_transcript: the marker table, JSONL, auto, sub-segments, merging, cache_system_turn, audit trail."""

from __future__ import annotations

import json

import pytest

from velesmem.context.ingest import IngestRoots
from velesmem.context.service import ContextService
from velesmem.context.transcript import MARKERS, segment_transcript
from velesmem.errors import ContextOverLimit, IngestDisabled, InvalidInput

LOG = "".join(f"2026-07-18 10:23:{i:02d},123 [{1000 + i}] ERROR upstream timeout\n" for i in range(10))
TRANSCRIPT = (
    "System: You are the deploy assistant.\n"
    "User: the canary failed, what now?\n"
    "Assistant: Here is the log:\n" + LOG +
    "And the fix:\n```sh\nUser: not a marker inside a fence\n\nkubectl rollout undo deployment/canary\n```\n"
    "Tool: ok\n"
)


def run(transcript: str, **extra) -> dict:
    args = {"query": "canary rollback", "token_budget": 4000, "transcript": transcript, **extra}
    return ContextService().compile_transcript(args)


def test_plain_markers_open_turns_and_the_trail_maps_byte_ranges_exactly() -> None:
    out = run(TRANSCRIPT, segmentation={"min_segment_bytes": 0})
    seg = out["segmentation"]
    assert seg["format_detected"] == "plain"
    raw = TRANSCRIPT.encode()
    roles = [s["role"] for s in seg["segments"]]
    assert roles[0] == "System" and "Tool" in roles and roles.count("User") == 1
    kinds = [(s["role"], s["kind"]) for s in seg["segments"]]
    assert ("Assistant", "log") in kinds and ("Assistant", "code") in kinds
    fragments_text = [d for d in out["context"]["decisions"]]
    assert len(fragments_text) == len(seg["segments"])
    pos = 0
    for s, d in zip(seg["segments"], out["context"]["decisions"]):
        assert s["byte_start"] == pos and s["byte_end"] > s["byte_start"]
        assert s["fragment_id"] == d["fragment_id"]
        pos = s["byte_end"]
    assert pos == len(raw)


def test_every_marker_of_the_closed_table_is_recognised() -> None:
    text = "".join(f"{prefix} turn {i}\n" for i, (prefix, _) in enumerate(MARKERS))
    seg = segment_transcript(text, "plain", 0)
    assert [s.role for s in seg.segments] == [role for _, role in MARKERS]


def test_no_marker_means_one_turn_with_a_null_role() -> None:
    seg = segment_transcript("just some notes\nwith two lines\n", "auto", 256)
    assert [(s.turn, s.role) for s in seg.segments] == [(0, None)]


def test_log_runs_collapse_through_abstract_log_dedup() -> None:
    out = run(TRANSCRIPT, policy={"normalize_log_timestamps": True})
    rules = {d["rule_id"] for d in out["context"]["decisions"]}
    assert "abstract.log_dedup" in rules and "preserve.code_fence" in rules


def test_small_segments_merge_within_a_turn_and_kind() -> None:
    text = "User: a\n\nb\n\nc\n\nd\nAssistant: e\n"
    assert segment_transcript(text, "plain", 0).merged_segments == 0
    merged = segment_transcript(text, "plain", 256)
    assert merged.merged_segments == 3
    assert [(s.role, s.kind) for s in merged.segments] == [("User", "body"), ("Assistant", "body")]


def test_cache_system_turn_marks_the_system_prompt_as_the_cache_prefix() -> None:
    out = run(TRANSCRIPT)
    assert out["context"]["decisions"][0]["rule_id"] == "cache.stable_prefix"
    assert out["context"]["sections"][0]["name"] == "cache"
    off = run(TRANSCRIPT, segmentation={"cache_system_turn": False})
    assert off["context"]["decisions"][0]["rule_id"] != "cache.stable_prefix"


def test_jsonl_one_line_one_turn_blank_lines_fold_in() -> None:
    lines = [json.dumps({"role": "system", "content": "Be brief."}), "",
             json.dumps({"role": "user", "content": "hi"}),
             json.dumps({"role": "assistant", "content": [{"type": "text", "text": "hello"}]})]
    text = "\n".join(lines) + "\n"
    out = run(text)
    seg = out["segmentation"]
    assert seg["format_detected"] == "jsonl"
    assert [s["role"] for s in seg["segments"]] == ["system", "user", "assistant"]
    assert seg["segments"][0]["byte_end"] == seg["segments"][1]["byte_start"]
    assert out["context"]["decisions"][0]["rule_id"] == "cache.stable_prefix"  # role "system"


def test_auto_falls_back_to_plain_but_a_forced_jsonl_failure_is_an_error() -> None:
    assert run("User: hi\nAssistant: hello\n")["segmentation"]["format_detected"] == "plain"
    with pytest.raises(ContextOverLimit, match="jsonl"):
        run("User: hi\n", segmentation={"format": "jsonl"})
    with pytest.raises(InvalidInput):
        run("User: hi\n", segmentation={"format": "xml"})


def test_exactly_one_of_transcript_or_path() -> None:
    service = ContextService()
    with pytest.raises(InvalidInput, match="exactly one"):
        service.compile_transcript({"query": "q", "token_budget": 1})
    with pytest.raises(InvalidInput, match="exactly one"):
        service.compile_transcript({"query": "q", "token_budget": 1, "transcript": "x", "path": "/x"})
    with pytest.raises(IngestDisabled):
        service.compile_transcript({"query": "q", "token_budget": 1, "path": "/x"})


def test_a_transcript_path_goes_through_the_ingest_allowlist(tmp_path) -> None:
    (tmp_path / "t.txt").write_text(TRANSCRIPT, encoding="utf-8")
    service = ContextService(roots=IngestRoots.from_settings((str(tmp_path),)))
    out = service.compile_transcript({"query": "q", "token_budget": 4000, "path": str(tmp_path / "t.txt")})
    assert out["segmentation"]["segments"][-1]["byte_end"] == len(TRANSCRIPT.encode())


def test_context_is_byte_compatible_with_compile_context() -> None:
    out = run(TRANSCRIPT)
    seg = segment_transcript(TRANSCRIPT, "auto", 256)
    from velesmem.context.transcript import segments_to_fragments

    direct = ContextService().compile_context(
        {"query": "canary rollback", "token_budget": 4000, "fragments": segments_to_fragments(seg, True)})
    assert json.dumps(out["context"]) == json.dumps(direct)


def test_an_oversized_fence_is_context_over_limit() -> None:
    big = "User: x\n```\n" + ("y" * 1000 + "\n") * 1100 + "```\n"
    with pytest.raises(ContextOverLimit, match="fenced code block"):
        segment_transcript(big, "plain", 256)

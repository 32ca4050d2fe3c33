"""compile_transcript reads ``user:`` / ``assistant:`` in any case as separate turns, and never
returns empty content without a warning saying why."""

from __future__ import annotations

from typing import Any

import pytest

from velesmem.context.service import ContextService
from velesmem.context.transcript import segment_transcript

LOWER = ("user: the canary failed at 2% traffic, what now?\n"
         "assistant: roll it back with kubectl rollout undo deployment/canary\n"
         "user: done, it is back to the previous revision\n")


def run(transcript: str, budget: int = 4000, **extra: Any) -> dict[str, Any]:
    args = {"query": "canary rollback", "token_budget": budget, "transcript": transcript, **extra}
    return ContextService().compile_transcript(args)


def test_lower_case_user_and_assistant_lines_are_separate_turns() -> None:
    out = run(LOWER)
    segments = out["segmentation"]["segments"]
    assert [(s["turn"], s["role"]) for s in segments] == [(0, "User"), (1, "Assistant"), (2, "User")]
    assert len(out["context"]["decisions"]) == 3
    assert out["context"]["warnings"] == []


@pytest.mark.parametrize("spelling", ["user:", "USER:", "User:", "uSeR:"])
def test_a_marker_opens_a_turn_whatever_its_case(spelling: str) -> None:
    seg = segment_transcript(f"Assistant: hello\n{spelling} hi\n", "plain", 0)
    assert [s.role for s in seg.segments] == ["Assistant", "User"]


def test_a_lower_case_marker_inside_a_code_fence_opens_no_turn() -> None:
    seg = segment_transcript("assistant: here\n```\nuser: quoted\n```\n", "plain", 0)
    assert {s.turn for s in seg.segments} == {0}


def test_a_word_that_only_starts_like_a_marker_opens_no_turn() -> None:
    seg = segment_transcript("users: many\nassistants vary\n", "plain", 0)
    assert [s.role for s in seg.segments] == [None]


def test_a_budget_that_fits_nothing_says_so_in_a_warning() -> None:
    out = run(LOWER, budget=5)
    assert out["context"]["content"] == ""
    assert out["context"]["warnings"] and "token_budget" in out["context"]["warnings"][0]


def test_jsonl_turns_with_empty_content_become_no_fragment_and_are_counted() -> None:
    text = ('{"role": "user", "content": ""}\n'
            '{"role": "assistant", "content": "roll back the canary"}\n'
            '{"role": "user", "content": "   "}\n')
    out = run(text)
    segments = out["segmentation"]["segments"]
    assert [(s["turn"], s["role"]) for s in segments] == [(1, "assistant")]
    assert (segments[0]["byte_start"], segments[0]["byte_end"]) == (0, len(text.encode()))
    assert out["context"]["content"] == "roll back the canary"
    assert out["context"]["warnings"] == ["2 transcript turn(s) had empty content and became no fragment"]


def test_a_transcript_whose_turns_are_all_empty_returns_empty_content_with_a_warning() -> None:
    out = run('{"role": "user", "content": ""}\n{"role": "assistant", "content": []}\n')
    assert out["segmentation"]["format_detected"] == "jsonl"
    assert out["context"]["content"] == ""
    assert any("content is empty" in w and "no turn" in w for w in out["context"]["warnings"])

"""Segment a raw agent-session transcript into compile fragments, with a byte-exact audit trail.

Formats: ``jsonl`` (one ``{"role", "content"}`` object per line; blank lines, and turns whose
content is empty, fold into the turn before them), ``plain`` (turns opened by a closed table of
line-start markers, in any case — ``user:`` is ``User:``; a marker inside an open code fence does
not open a turn), ``auto`` (jsonl when every non-blank line parses, else
plain; a forced format that fails is an error). Plain turns are cut into ``code`` (a fenced
block, atomic), ``log`` (≥ 8 consecutive log-like lines) and ``body`` segments; segments under
``min_segment_bytes`` merge into an adjacent segment of the same turn and kind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from velesmem.errors import ContextOverLimit, InvalidInput
from velesmem.limits import DEFAULT_MIN_SEGMENT_BYTES, MAX_FRAGMENT_BYTES, MAX_FRAGMENTS

FORMATS = ("auto", "plain", "jsonl")
MARKERS: tuple[tuple[str, str], ...] = (
    ("System:", "System"),
    ("User:", "User"),
    ("Human:", "Human"),
    ("Assistant:", "Assistant"),
    ("AI:", "AI"),
    ("Tool:", "Tool"),
    ("### User", "User"),
    ("### Assistant", "Assistant"),
)
MIN_LOG_RUN = 8
_LOG_LINE = re.compile(
    r"^\s*(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}|"
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:|\[\d+\]|pid[=: ]\d+|"
    r"\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\]?[ :])"
)


@dataclass
class Segment:
    """One piece of the transcript that becomes one fragment."""

    turn: int
    role: str | None
    kind: str  # body | code | log
    byte_start: int
    byte_end: int
    text: str
    # JSONL children of one oversized line share its span; they must not be merged back.
    split: bool = False


@dataclass
class Segmentation:
    """Segments plus what the audit trail reports."""

    format_detected: str
    segments: list[Segment] = field(default_factory=list)
    merged_segments: int = 0
    empty_turns: int = 0  # JSONL turns with no content: no fragment, their bytes fold in


@dataclass
class _Line:
    text: str  # with its line ending
    char_start: int
    byte_start: int
    byte_end: int


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    char = 0
    byte = 0
    for line in text.splitlines(keepends=True):
        n = len(line.encode("utf-8"))
        out.append(_Line(line, char, byte, byte + n))
        char += len(line)
        byte += n
    return out


def _is_fence(line: str) -> bool:
    return line.lstrip().startswith("```")


def _marker(line: str) -> str | None:
    """The role a line opens, matched in any case (``user:``, ``USER:``, ``User:``)."""
    head = line[:_LONGEST_MARKER].casefold()
    for prefix, role in _FOLDED_MARKERS:
        if head.startswith(prefix):
            return role
    return None


_FOLDED_MARKERS = tuple((prefix.casefold(), role) for prefix, role in MARKERS)
_LONGEST_MARKER = max(len(prefix) for prefix, _ in MARKERS)


# --- JSONL ----------------------------------------------------------------------------------


def _content_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # [{"type": "text", "text": ...}, ...]
        parts = [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if len(parts) == len(value) else None
    return None


def _parse_jsonl(lines: list[_Line]) -> tuple[list[Segment], int] | None:
    """One segment per turn line with content, and how many turns had none (their bytes fold
    into the segment before, or the first one after); None when any non-blank line is not a
    {role, content} object, or no line is one."""
    segments: list[Segment] = []
    turns = 0
    empty = 0
    pending: int | None = None  # where bytes waiting for a first segment start
    for line in lines:
        stripped = line.text.strip()
        if not stripped:
            if segments:  # a blank line folds into the turn before it
                segments[-1].byte_end = line.byte_end
            elif pending is None:
                pending = line.byte_start
            continue
        try:
            obj = json.loads(stripped)
        except ValueError:
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
            return None
        content = _content_text(obj.get("content"))
        if content is None:
            return None
        turns += 1
        if not content.strip():
            empty += 1
            if segments:
                segments[-1].byte_end = line.byte_end
            elif pending is None:
                pending = line.byte_start
            continue
        start = line.byte_start if pending is None else pending
        pending = None
        segments.append(Segment(turns - 1, obj["role"], "body", start, line.byte_end, content))
    return (segments, empty) if turns else None


# --- plain ----------------------------------------------------------------------------------


def _plain_turns(lines: list[_Line]) -> list[tuple[str | None, list[_Line]]]:
    turns: list[tuple[str | None, list[_Line]]] = []
    in_fence = False
    for line in lines:
        role = None if in_fence else _marker(line.text)
        if role is not None or not turns:
            turns.append((role, []))
        turns[-1][1].append(line)
        if _is_fence(line.text):
            in_fence = not in_fence
    return turns


def _sub_segments(turn: int, role: str | None, lines: list[_Line]) -> list[Segment]:
    kinds: list[str] = ["body"] * len(lines)
    i = 0
    while i < len(lines):  # fenced blocks (an unclosed fence runs to the end of the turn)
        if _is_fence(lines[i].text):
            j = i + 1
            while j < len(lines) and not _is_fence(lines[j].text):
                j += 1
            end = min(j, len(lines) - 1)
            for k in range(i, end + 1):
                kinds[k] = "code"
            i = end + 1
            continue
        i += 1
    i = 0
    while i < len(lines):  # runs of log-like lines outside fences
        j = i
        seen: set[str] = set()
        while j < len(lines) and kinds[j] == "body":
            t = lines[j].text.rstrip("\r\n")
            if not (_LOG_LINE.match(t) or (t.strip() and t in seen)):
                break
            seen.add(t)
            j += 1
        if j - i >= MIN_LOG_RUN:
            for k in range(i, j):
                kinds[k] = "log"
            i = j
        else:
            i = max(i + 1, j if j > i else i + 1)
    segments: list[Segment] = []
    for line, kind in zip(lines, kinds):
        prev = segments[-1] if segments else None
        # consecutive code lines of one fence stay together; a new fence opens a new segment
        new_fence = kind == "code" and _is_fence(line.text) and prev is not None and prev.kind == "code" \
            and prev.text.count("```") % 2 == 0
        # a body paragraph ends at a blank line: the next non-blank line opens a new segment
        new_paragraph = kind == "body" and prev is not None and prev.kind == "body" \
            and line.text.strip() != "" and prev.text.endswith(("\n\n", "\r\n\r\n"))
        if prev is not None and prev.kind == kind and not new_fence and not new_paragraph:
            prev.byte_end = line.byte_end
            prev.text += line.text
        else:
            segments.append(Segment(turn, role, kind, line.byte_start, line.byte_end, line.text))
    return segments


def _split_oversized(seg: Segment) -> list[Segment]:
    """Cut a body/log segment over MAX_FRAGMENT_BYTES at line boundaries; a fence cannot be cut."""
    if len(seg.text.encode("utf-8")) <= MAX_FRAGMENT_BYTES:
        return [seg]
    if seg.kind == "code":
        raise ContextOverLimit(
            f"transcript segmentation: a fenced code block of turn {seg.turn} is over "
            f"{MAX_FRAGMENT_BYTES} bytes and cannot be split"
        )
    out: list[Segment] = []
    buf = ""
    start = seg.byte_start
    for piece in _pieces(seg.text):
        if buf and len((buf + piece).encode("utf-8")) > MAX_FRAGMENT_BYTES:
            end = start if seg.split else start + len(buf.encode("utf-8"))
            out.append(Segment(seg.turn, seg.role, seg.kind, start, end, buf, seg.split))
            start = end
            buf = ""
        buf += piece
    out.append(Segment(seg.turn, seg.role, seg.kind, start, seg.byte_end, buf, seg.split))
    if seg.split:
        for s in out:
            s.byte_start, s.byte_end = seg.byte_start, seg.byte_end
    return out


def _pieces(text: str) -> list[str]:
    """Lines, and any single line over the cap cut into cap-sized character runs."""
    out: list[str] = []
    step = MAX_FRAGMENT_BYTES // 4  # 4 bytes per character at most
    for line in text.splitlines(keepends=True):
        if len(line.encode("utf-8")) <= MAX_FRAGMENT_BYTES:
            out.append(line)
        else:
            out.extend(line[i : i + step] for i in range(0, len(line), step))
    return out


def _merge_small(segments: list[Segment], min_bytes: int) -> tuple[list[Segment], int]:
    """Merge segments under ``min_bytes`` into an adjacent one of the same turn and kind."""
    merged = 0
    out: list[Segment] = []
    for seg in segments:
        prev = out[-1] if out else None
        size = len(seg.text.encode("utf-8"))
        prev_size = len(prev.text.encode("utf-8")) if prev is not None else 0
        if (
            prev is not None
            and not seg.split
            and not prev.split
            and prev.turn == seg.turn
            and prev.kind == seg.kind
            and seg.kind != "code"
            and (size < min_bytes or prev_size < min_bytes)
            and prev_size + size <= MAX_FRAGMENT_BYTES
            and prev.byte_end == seg.byte_start
        ):
            prev.text += seg.text
            prev.byte_end = seg.byte_end
            merged += 1
            continue
        out.append(seg)
    return out, merged


def segment_transcript(
    text: str, fmt: str = "auto", min_segment_bytes: int = DEFAULT_MIN_SEGMENT_BYTES
) -> Segmentation:
    """Cut ``text`` into segments; ContextOverLimit when a forced format fails or caps are hit."""
    if fmt not in FORMATS:
        raise InvalidInput(f"segmentation.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not text.strip():
        raise InvalidInput("transcript is empty")
    lines = _lines(text)
    segments: list[Segment] | None = None
    detected = "plain"
    empty_turns = 0
    if fmt in ("auto", "jsonl"):
        parsed = _parse_jsonl(lines)
        if parsed is not None:
            segments, empty_turns = parsed
            detected = "jsonl"
            for s in segments:
                s.split = len(s.text.encode("utf-8")) > MAX_FRAGMENT_BYTES
        elif fmt == "jsonl":
            raise ContextOverLimit(
                "transcript segmentation: format 'jsonl' was forced but a non-blank line is not a "
                '{"role": ..., "content": ...} JSON object'
            )
    if segments is None:
        segments = []
        for turn, (role, turn_lines) in enumerate(_plain_turns(lines)):
            segments.extend(_sub_segments(turn, role, turn_lines))
    merged = 0
    if detected == "plain":
        segments, merged = _merge_small(segments, min_segment_bytes)
    final: list[Segment] = []
    for seg in segments:
        final.extend(_split_oversized(seg))
    if len(final) > MAX_FRAGMENTS:
        raise ContextOverLimit(
            f"transcript segmentation produced {len(final)} segments; the cap is {MAX_FRAGMENTS} "
            "fragments (raise segmentation.min_segment_bytes to merge more)"
        )
    return Segmentation(detected, final, merged, empty_turns)


def segments_to_fragments(seg: Segmentation, cache_system_turn: bool) -> list[dict[str, Any]]:
    """The compile fragments, one per segment, in order."""
    first_role = seg.segments[0].role if seg.segments else None
    cache_turn = 0 if cache_system_turn and (first_role or "").lower() == "system" else None
    fragments: list[dict[str, Any]] = []
    for s in seg.segments:
        frag: dict[str, Any] = {"content": s.text}
        if s.kind in ("code", "log"):
            frag["kind"] = s.kind
        if cache_turn is not None and s.turn == cache_turn:
            frag["metadata"] = {"cache": True}
        fragments.append(frag)
    return fragments


def transcript_warnings(seg: Segmentation, context: dict[str, Any]) -> list[str]:
    """What compile_transcript adds to the compiled context's warnings: turns skipped for having
    no content, and an empty result that nothing else explained."""
    out: list[str] = []
    if seg.empty_turns:
        out.append(f"{seg.empty_turns} transcript turn(s) had empty content and became no fragment")
    if not context["content"] and not context["warnings"]:
        why = ("no turn of the transcript has any content" if not seg.segments
               else "every fragment was set aside (see decisions and retrieval_handles)")
        out.append(f"the compiled content is empty: {why}")
    return out

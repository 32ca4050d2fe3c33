"""Cut an item's packable text into chunks: paragraphs, with code fences and media atomic.

Chunks split only at whole whitespace runs, so the estimator is exactly additive over them:
the cost of ``text[:chunk.end]`` is the sum of the chunk costs up to it (each chunk carries the
whitespace run before it).
"""

from __future__ import annotations

import bisect
import itertools
import re

from velesmem.context.estimator import estimate_tokens
from velesmem.context.items import Chunk, Item

_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


def media_piece(item: Item) -> str:
    """The text standing for an inline image in the assembled content."""
    assert item.media is not None
    m = item.media
    size = f" {m.width}x{m.height}" if m.width and m.height else ""
    line = f"[image {m.mime}{size} {item.handle}]"
    return f"{line}\n{item.text}" if item.text else line


def packable_text(item: Item) -> str:
    """What packing places in the content for this item."""
    if item.media is not None:
        return media_piece(item)
    return item.packed_text if item.packed_text is not None else item.text


def chunk_item(item: Item) -> None:
    """Fill ``item.chunks``; media, ``kind: "code"`` and single paragraphs make one chunk."""
    text = packable_text(item)
    image = item.media.tokens if item.media is not None else 0
    atomic = item.media is not None or item.kind == "code"
    by_line = item.rule_id == "abstract.log_dedup"
    cuts = [] if atomic else _cut_points(text, by_line)
    if not cuts and item.media is None and text is item.text:
        item.chunks = [Chunk(0, len(text), item.tokens)]  # already estimated by validation
        return
    bounds = [0] + [cut_start for cut_start, _ in cuts] + [len(text)]
    chunks = [
        Chunk(a, b, estimate_tokens(text[a:b])) for a, b in itertools.pairwise(bounds)
    ]  # each chunk after the first begins with the whole whitespace run that separates it
    chunks[-1].tokens += image
    item.chunks = chunks


# A whole whitespace run holding two newlines or more (one for logs); anchored at run starts so a
# long run of spaces costs O(n), not O(n²).
_PARAGRAPH_BREAK = re.compile(r"(?<!\s)\s*\n[^\S\n]*\n\s*")
_LINE_BREAK = re.compile(r"(?<!\s)\s*\n\s*")


def _cut_points(text: str, by_line: bool) -> list[tuple[int, int]]:
    fences = [m.start() for m in _FENCE_LINE.finditer(text)] if "```" in text else []
    cuts: list[tuple[int, int]] = []
    for m in (_LINE_BREAK if by_line else _PARAGRAPH_BREAK).finditer(text):
        if m.start() == 0 or m.end() == len(text):
            continue  # leading / trailing whitespace is not a break between chunks
        if fences and bisect.bisect_left(fences, m.start()) % 2 == 1:
            continue  # inside an open code fence
        cuts.append((m.start(), m.end()))
    return cuts

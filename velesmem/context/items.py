"""The compiler's working unit: one candidate fragment and what each stage decided about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from velesmem.context.media import Media
from velesmem.ids import SOURCE_HANDLE_PREFIX


@dataclass
class Chunk:
    """A packable piece of an item's text: ``text[start:end]`` (media items have one chunk)."""

    start: int
    end: int
    tokens: int


@dataclass
class Item:
    """A fragment (or a pulled memory) moving through the pipeline."""

    order: int  # position among all candidates: request fragments first, then pulled memories
    index: int | None  # 0-based position in request.fragments; None for a pulled memory
    fragment_id: int
    content_hash: int
    text: str  # the content (a file's text for a path fragment, the caption for media)
    kind: str | None = None
    priority: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    media: Media | None = None
    memory_id: int | None = None
    memory_reason: str | None = None
    tokens: int = 0  # the original cost: text + image
    rule_id: str = "preserve.default"
    critical: bool = False
    reason: str = ""
    relevance: float = 0.0
    dropped_rule: str | None = None  # drop.* / retrieve.screenshot_superseded, set before packing
    packed_text: str | None = None  # the text to pack (a collapsed log differs from ``text``)
    chunks: list[Chunk] = field(default_factory=list)
    packed_chunks: int = 0
    packed_tokens: int = 0

    @property
    def handle(self) -> str:
        return f"{SOURCE_HANDLE_PREFIX}{self.content_hash}"

    @property
    def is_cache(self) -> bool:
        return self.rule_id == "cache.stable_prefix"

    @property
    def source_bytes(self) -> bytes:
        """The bytes the handle is the hash of: decoded media, else the UTF-8 text."""
        return self.media.data if self.media is not None else self.text.encode("utf-8")

"""Greedy packing under the budget, in the reference order, with a query-independent cache prefix.

Order: cache-marked fragments first (by priority, then input order — never by relevance, so the
prefix cannot depend on the query), then critical before the rest, higher priority first, more
relevant first, input order last. Each item packs whole, or as the longest prefix of its chunks
that fits, or not at all (externalized behind its handle).
"""

from __future__ import annotations

from velesmem.context.estimator import SEPARATOR_TOKENS
from velesmem.context.items import Item


def pack_order(item: Item) -> tuple[int, int, int, float, int]:
    """The sort key (ascending) that decides who gets budget first."""
    cache = item.is_cache
    return (
        0 if cache else 1,
        0 if item.critical else 1,
        -item.priority,
        0.0 if cache else -item.relevance,
        item.order,
    )


def _edge_extra(text: str, start: int, end: int) -> int:
    """Extra tokens a join can cost when a piece starts or ends with whitespace."""
    extra = 0
    if start < end and text[start].isspace():
        extra += 1
    if start < end and text[end - 1].isspace():
        extra += 1
    return extra


def pack(items: list[Item], budget: int, texts: dict[int, str]) -> None:
    """Set ``packed_chunks`` / ``packed_tokens`` on each candidate; ``texts`` maps order → text."""
    remaining = budget + SEPARATOR_TOKENS  # n pieces need n - 1 separators: the first is free
    for item in sorted(items, key=pack_order):
        text = texts[item.order]
        chunks = item.chunks
        full = sum(c.tokens for c in chunks)
        cost = full + SEPARATOR_TOKENS + _edge_extra(text, 0, len(text))
        if cost <= remaining:
            item.packed_chunks = len(chunks)
            item.packed_tokens = full
            remaining -= cost
            continue
        best = 0
        best_cost = 0
        best_tokens = 0
        running = 0
        for k, chunk in enumerate(chunks[:-1], start=1):
            running += chunk.tokens
            c = running + SEPARATOR_TOKENS + _edge_extra(text, 0, chunk.end)
            if c > remaining:
                break
            best, best_cost, best_tokens = k, c, running
        if best:
            item.packed_chunks = best
            item.packed_tokens = best_tokens
            remaining -= best_cost


def min_budget(item: Item, text: str) -> int:
    """The smallest token_budget under which this item packs (at least its first chunk) alone."""
    first = item.chunks[0]
    return first.tokens + _edge_extra(text, 0, first.end)

"""``drop.duplicate`` (same bytes; decoded bytes for media) and ``drop.near_duplicate``.

The first occurrence in input order survives. Media is deduplicated on its decoded bytes only
(captions are ignored: blank captions would otherwise all collide) and never near-duplicated.
"""

from __future__ import annotations

from velesmem.context.items import Item


def near_key(text: str) -> str:
    """Text after lowercasing and collapsing whitespace."""
    return " ".join(text.lower().split())


def dedup(items: list[Item], disabled: frozenset[str]) -> None:
    """Mark later duplicates with ``dropped_rule`` and say which fragment they duplicate."""
    exact: dict[tuple[bool, int], Item] = {}
    near: dict[str, Item] = {}
    for item in items:
        key = (item.media is not None, item.content_hash)
        if "drop.duplicate" not in disabled:
            first = exact.get(key)
            if first is not None:
                item.dropped_rule = "drop.duplicate"
                what = "image bytes" if item.media is not None else "content"
                item.reason = f"same {what} as {_name(first)}"
                continue
        exact.setdefault(key, item)
        if item.media is not None or "drop.near_duplicate" in disabled:
            continue
        nkey = near_key(item.text)
        first = near.get(nkey)
        if first is not None and first.content_hash != item.content_hash:
            item.dropped_rule = "drop.near_duplicate"
            item.reason = f"same text as {_name(first)} after lowercasing and collapsing whitespace"
            continue
        near.setdefault(nkey, item)


def _name(item: Item) -> str:
    if item.index is not None:
        return f"fragment {item.index} (fragment_id {item.fragment_id})"
    return f"memory {item.memory_id}"

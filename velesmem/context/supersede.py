"""``retrieve.screenshot_superseded``: only the last screenshot of a given target stays inline."""

from __future__ import annotations

import json

from velesmem.context.items import Item

RULE_ID = "retrieve.screenshot_superseded"


def supersede_screenshots(items: list[Item], disabled: frozenset[str]) -> None:
    """Earlier screenshots (media + kind "screenshot") of the same ``metadata.target`` step aside."""
    if RULE_ID in disabled:
        return
    last: dict[str, Item] = {}
    series: list[tuple[str, Item]] = []
    for item in items:
        if item.dropped_rule or item.media is None or item.kind != "screenshot":
            continue
        target = item.metadata.get("target")
        if target is None:
            continue  # no evidence it succeeds anything
        key = json.dumps(target, sort_keys=True, ensure_ascii=False)
        series.append((key, item))
        last[key] = item
    for key, item in series:
        newest = last[key]
        if newest is not item:
            item.dropped_rule = RULE_ID
            item.reason = (
                f"superseded by a later screenshot of the same target ({_name(newest)}); "
                "set aside behind its handle"
            )


def _name(item: Item) -> str:
    return f"fragment {item.index}" if item.index is not None else f"memory {item.memory_id}"

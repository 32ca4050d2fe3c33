"""The rule table: the first matching rule (not disabled by the policy) classifies a fragment."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from velesmem.context.items import Item
from velesmem.context.logs import has_repeated_line

NEGATIVE_MARKERS = ("never ", "must not", "do not", "don't", "don\u2019t", "ne pas", "ne jamais", "jamais ")
URL_MARKERS = ("http://", "https://")
EXACT_VALUE_TOKENS = 3


@dataclass(frozen=True)
class Rule:
    """One classification rule: a stable id, whether losing it is critical, and its test."""

    rule_id: str
    critical: bool
    matches: Callable[[Item, bool], bool]
    reason: str


def _has_fence(item: Item, _: bool) -> bool:
    return item.kind == "code" or "```" in item.text


def _negative(item: Item, _: bool) -> bool:
    low = item.text.lower()
    return any(m in low for m in NEGATIVE_MARKERS)


def _log(item: Item, normalize: bool) -> bool:
    return item.kind == "log" and has_repeated_line(item.text, normalize)


# A whitespace-delimited word holding a digit; anchored at word starts so a long word costs O(n).
_DIGIT_WORD = re.compile(r"(?<!\S)[^\s\d]*\d")


def _exact_values(item: Item, _: bool) -> bool:
    for hits, _match in enumerate(_DIGIT_WORD.finditer(item.text), start=1):
        if hits >= EXACT_VALUE_TOKENS:
            return True
    return False


def _url(item: Item, _: bool) -> bool:
    return any(m in item.text for m in URL_MARKERS)


RULES: tuple[Rule, ...] = (
    Rule("media.atomic", True, lambda it, _: it.media is not None,
         "inline image: packed whole or not at all"),
    Rule("preserve.marked_verbatim", True, lambda it, _: it.metadata.get("verbatim") is True,
         "metadata.verbatim: kept byte for byte"),
    Rule("cache.stable_prefix", True, lambda it, _: it.metadata.get("cache") is True,
         "metadata.cache: placed in the stable cache prefix"),
    Rule("preserve.code_fence", True, _has_fence, "code: kept verbatim, fences atomic"),
    Rule("preserve.negative_constraint", True, _negative, "negative constraint: kept verbatim"),
    Rule("abstract.log_dedup", False, _log, "log with repeated lines"),
    Rule("preserve.exact_values", True, _exact_values, "exact values (numbers, dates, ids): kept verbatim"),
    Rule("preserve.url", True, _url, "URL: kept verbatim"),
    Rule("preserve.default", False, lambda it, _: True, "kept as written"),
)


def classify(item: Item, disabled: frozenset[str], normalize_logs: bool) -> None:
    """Set ``rule_id``, ``critical`` and ``reason`` on ``item`` from the first matching rule."""
    for rule in RULES:
        if rule.rule_id in disabled:
            continue
        if rule.matches(item, normalize_logs):
            item.rule_id = rule.rule_id
            item.critical = rule.critical
            item.reason = rule.reason
            return

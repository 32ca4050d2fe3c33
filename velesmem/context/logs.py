"""``abstract.log_dedup``: collapse repeated log lines into one line with a count.

Grouping is byte-exact by default; ``policy.normalize_log_timestamps`` masks a fixed set of
leading timestamp / counter patterns in the grouping key only — the emitted line is always the
first occurrence's exact bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_LOG4J = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
_SYSLOG = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2}"
_LEADING_STAMP = re.compile(rf"^\s*(?:{_ISO}|{_LOG4J}|{_SYSLOG})(?:\s*\[[0-9A-Fa-f]+\])*")


@dataclass(frozen=True)
class Collapsed:
    """A collapsed log: the new text and what happened, for the decision's reason."""

    text: str
    lines: int
    distinct: int
    normalized_merges: bool


def _key(line: str, normalize: bool) -> str:
    return _LEADING_STAMP.sub("\0ts", line, count=1) if normalize else line


def has_repeated_line(text: str, normalize: bool) -> bool:
    """True when at least two non-blank lines share a grouping key."""
    seen: set[str] = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        key = _key(line, normalize)
        if key in seen:
            return True
        seen.add(key)
    return False


def collapse(text: str, normalize: bool) -> Collapsed:
    """Each distinct line once, at its first position, suffixed `` (xN)`` when it repeated."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    order: list[str] = []
    exact: set[str] = set()
    total = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        total += 1
        exact.add(line)
        key = _key(line, normalize)
        if key not in counts:
            counts[key] = 0
            first[key] = line
            order.append(key)
        counts[key] += 1
    out = [first[k] if counts[k] == 1 else f"{first[k]} (x{counts[k]})" for k in order]
    exact_groups = len(exact)
    return Collapsed("\n".join(out), total, len(order), normalize and len(order) < exact_groups)

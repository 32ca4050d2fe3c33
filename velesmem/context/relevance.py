"""Lexical relevance: the share of the query's terms that the fragment contains."""

from __future__ import annotations

import re

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
RELEVANCE_DIGITS = 4  # rounded so the value prints identically everywhere


def terms(text: str) -> set[str]:
    """Lowercase alphanumeric runs."""
    return set(_TERM.findall(text.lower()))


def relevance(query_terms: set[str], text: str) -> float:
    """|query terms ∩ fragment terms| / |query terms| (0 for a query without terms)."""
    if not query_terms:
        return 0.0
    return round(len(query_terms & terms(text)) / len(query_terms), RELEVANCE_DIGITS)

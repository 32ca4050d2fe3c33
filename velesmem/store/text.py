"""What every backend's text index shares: the query's words.

A query's BM25 terms are its lowercase word tokens (maximal runs of letters and digits, the
tokens FTS5's ``unicode61`` tokenizer makes) minus English stopwords, first occurrences only,
at most ``MAX_QUERY_TERMS``.
"""

from __future__ import annotations

import re

from velesmem.embed.stopwords import STOPWORDS

MAX_QUERY_TERMS = 32
_WORD = re.compile(r"[^\W_]+")


def query_terms(query: str) -> list[str]:
    """The BM25 terms of a query: lowercase word tokens, stopwords dropped, first occurrences."""
    seen: dict[str, None] = {}
    for tok in _WORD.findall(query.lower()):
        if tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)[:MAX_QUERY_TERMS]

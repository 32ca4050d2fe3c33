"""What every backend's text index shares: the query's words and the BM25 parameters.

A query's BM25 terms are its lowercase word tokens (maximal runs of letters and digits, the
tokens FTS5's ``unicode61`` tokenizer makes) minus English stopwords, first occurrences only,
at most ``MAX_QUERY_TERMS``.
"""

from __future__ import annotations

import re

from velesmem.embed.stopwords import STOPWORDS

MAX_QUERY_TERMS = 32
# BM25 over facts: FTS5's k1, and much less length normalisation than its b = 0.75. Facts are
# short and similar in length, so normalising by length mostly punishes the fact that says a
# little more; on LoCoMo b = 0.1 lifts hybrid hit@5 from 0.589 to 0.617 (hash) and from 0.632
# to 0.661 (local) on SQLite. Cross-validated on SQuAD and HotpotQA subsets, which lean weakly
# towards more normalisation while LoCoMo loses clearly with it: kept — docs/ranking.md.
BM25_K1 = 1.2
BM25_B = 0.1
_WORD = re.compile(r"[^\W_]+")


def query_terms(query: str) -> list[str]:
    """The BM25 terms of a query: lowercase word tokens, stopwords dropped, first occurrences."""
    seen: dict[str, None] = {}
    for tok in _WORD.findall(query.lower()):
        if tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)[:MAX_QUERY_TERMS]

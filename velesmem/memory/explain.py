"""A recall's score broken down per signal, for the dashboard: for each fact a query found, what
the text (normalised BM25), vector (cosine), graph, age and confidence signals contributed to its
rank key. Computed beside the ranking with the Ranker's own weights and formula
(``velesmem.memory.ranking``), so tool results never change; signals the current fusion does not
use (graph in recall, age) are reported with a contribution of 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from velesmem.memory.ranking import LEX_WEIGHT, Ranker, confidence_factor
from velesmem.store import FactStore, SearchStore
from velesmem.store.predicates import All

DAY_S = 86400.0


@dataclass(frozen=True)
class Signals:
    """One fact's signals (raw value, and what it added to the rank key)."""

    text: float  # BM25 / the best BM25 among the query's matches, in [0, 1]
    text_part: float
    vector: float  # raw cosine
    vector_part: float
    graph: float  # recall walks no graph: always 0 here (recall_fused's boost is separate)
    age_days: float
    age_part: float  # the fusion does not weigh age: 0
    confidence: float
    confidence_factor: float  # the multiplier the confidence applies to text + vector
    key: float  # the rank key: (text_part + vector_part) x confidence_factor


class ExplainStore(FactStore, SearchStore, Protocol):
    """The store roles a breakdown reads."""


def explain(store: ExplainStore, ranker: Ranker, query: str, keys: list[int],
            predicate: All, now: float, *, text_only: bool = False) -> dict[int, Signals]:
    """The signals of each live user fact among ``keys`` (int64) for ``query`` under
    ``predicate``; ``text_only`` while the vector side loads (cosine not compared: 0)."""
    if not keys:
        return {}
    # BM25 scores do not depend on the filter (it only restricts the candidates), so the text
    # side is searched unfiltered (a filtered search costs far more at 100k facts) and its best
    # score taken among the matches the filter admits, as the ranking normalises.
    lex_ids, lex_scores = store.text_search(query, None)
    allowed = ranker.allowed(predicate)
    admitted = lex_scores if allowed is None else lex_scores[np.isin(lex_ids, allowed)]
    best = float(admitted.max()) if len(admitted) else 0.0
    lex = dict(zip(lex_ids.tolist(), lex_scores.tolist()))
    if text_only:
        confidence = store.confidences(keys, now)
        scored = {k: (0.0, c) for k, c in confidence.items()}
    else:
        qv = ranker.embedder.embed([query])[0]
        scored = store.scored(qv, keys, now)
    facts = store.facts(list(scored), now)
    out: dict[int, Signals] = {}
    vector_weight = 0.0 if text_only else ranker.vector_weight
    for k, (cos, conf) in scored.items():
        lexical = lex.get(k, 0.0) / best if best > 0 else 0.0
        factor = confidence_factor(conf)
        created = facts[k].created_at if k in facts else now
        out[k] = Signals(
            text=lexical, text_part=LEX_WEIGHT * lexical * factor,
            vector=float(cos), vector_part=vector_weight * float(cos) * factor,
            graph=0.0, age_days=max(now - created, 0.0) / DAY_S, age_part=0.0,
            confidence=float(conf), confidence_factor=factor,
            key=(vector_weight * float(cos) + LEX_WEIGHT * lexical) * factor)
    return out

"""Hybrid ranking: the store's BM25 text index fused with vector similarity, then the confidence
blend.

For a query q and a candidate fact f (docs/ranking.md has the why and the LoCoMo figures):

    lex(f)   = bm25(q, f) / max over candidates bm25     in [0, 1]   (0 when no term matches)
    fused(f) = w_vec * cos(q, f) + lex(f)               w_vec = 1.5 for a semantic embedder,
                                                          0.5 for the hash one (both tuned on
                                                          LoCoMo, docs/ranking.md)
    key(f)   = fused(f) * (1 + 0.5 * (2 * confidence(f) - 1))

Candidates: the vector side's top ``depth`` (restricted to the filter) unioned with BM25's top
``depth`` (same filter), each candidate scored on both sides exactly. The BM25 query is the
query's words minus English stopwords (``velesmem.store.text``; each backend bounds and scores
it); with no term left the ranking is the vector one. In ``vector`` mode
(``VELESDB_MEMORY_RECALL_MODE=vector``) key(f) = (cos(q, f) + 1) / 2 * the same confidence
factor, applied to the vector top-k only, as the reference does. The returned score is always
the raw cosine; ``relevance`` (what recall_fused normalises) is max(key, 0) in hybrid mode and
max(cos, 0) in vector mode, so an unrelated fact weighs nothing there.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from velesmem.embed import Embedder
from velesmem.errors import Internal
from velesmem.ids import to_u64
from velesmem.store import SearchStore
from velesmem.store.predicates import All
from velesmem.store.scoring import top_scored

# Evidence floors (hybrid mode): a candidate with no lexical match counts only when its cosine
# reaches the floor; below it, it is not returned at all (recall answers *up to* k). The hash
# embedder's cosine without a shared word is bucket-collision noise, so its floor is high.
HASH_SIMILARITY_FLOOR = 0.3
SEMANTIC_SIMILARITY_FLOOR = 0.25
SEMANTIC_VECTOR_WEIGHT = 1.5  # LoCoMo-tuned for local, cross-validated (docs/ranking.md)
HASH_VECTOR_WEIGHT = 0.5  # LoCoMo-tuned, cross-validated on SQuAD and HotpotQA (docs/ranking.md)
LEX_WEIGHT = 1.0
MIN_CANDIDATES = 32


@dataclass(frozen=True)
class Ranked:
    """One ranked fact: its int64 key, rank key, raw cosine and non-negative relevance."""

    id: int
    key: float
    cosine: float
    relevance: float = 0.0


def confidence_factor(confidence: float) -> float:
    return 1.0 + 0.5 * (2.0 * confidence - 1.0)


class Ranker:
    """Ranks user facts for a query under a filter, per the module docstring."""

    def __init__(self, store: SearchStore, embedder: Embedder, mode: str,
                 pool: Executor | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.mode = mode
        self.pool = pool  # runs hybrid recall's vector side beside the text side
        self.vector_weight = SEMANTIC_VECTOR_WEIGHT if embedder.semantic else HASH_VECTOR_WEIGHT
        self.floor = SEMANTIC_SIMILARITY_FLOOR if embedder.semantic else HASH_SIMILARITY_FLOOR

    def allowed(self, predicate: All) -> np.ndarray | None:
        """The sorted keys a filter admits (None: no filter). The vector and text indexes hold
        user facts only, and the liveness check in ``rank`` drops any fact expired or forgotten
        meanwhile."""
        return None if predicate.is_true else self.store.matching(predicate)

    def rank(self, query: str, depth: int, predicate: All, now: float,
             qv: np.ndarray | None = None) -> list[Ranked]:
        """The best ``depth`` live user facts matching ``predicate``, best first."""
        store = self.store
        allowed = self.allowed(predicate)
        if allowed is not None and not len(allowed):
            return []
        if self.mode == "vector":
            if qv is None:
                qv = self.embedder.embed([query])[0]
            top = store.vector_top(qv, depth, allowed, now)
            scored = {k: (c, confidence) for k, c, confidence in top}
            cos = {k: c for k, c, _ in top}
            lex: dict[int, float] = {}
            best = 0.0
        else:
            n = max(depth, MIN_CANDIDATES)
            qv, lex_ids, lex_scores, candidates, early = self._search_both(query, qv, n,
                                                                           allowed, now)
            best = float(lex_scores.max()) if len(lex_scores) else 0.0
            # the BM25 top n (ties: ascending key)
            top = lex_ids[np.argsort(-lex_scores, kind="stable")[:n]].tolist()
            if early is None:  # one read for both sides
                scored = store.scored(qv, list(dict.fromkeys(candidates.tolist() + top)), now)
            else:  # the vector side's were read while BM25 ran
                asked = set(candidates.tolist())
                scored = {**early, **store.scored(qv, [i for i in top if i not in asked], now)}
            cos = _best(scored, candidates, n)
            cos.update((i, scored[i][0]) for i in top if i in scored)
            lex = _lookup(lex_ids, lex_scores, list(cos))
        out: list[Ranked] = []
        for i, c in cos.items():  # every one live: ``scored`` leaves out the gone ones
            factor = confidence_factor(scored[i][1])
            if self.mode == "vector":
                key = (c + 1.0) / 2.0 * factor
                out.append(Ranked(i, key, c, max(c, 0.0) * factor))
            else:
                lexical = lex.get(i, 0.0) / best if best > 0 else 0.0
                if lexical <= 0.0 and c < self.floor:
                    continue  # no evidence: never padded in
                key = (self.vector_weight * c + LEX_WEIGHT * lexical) * factor
                out.append(Ranked(i, key, c, max(key, 0.0)))
        out.sort(key=lambda r: (-r.key, to_u64(r.id)))
        return out[:depth]

    def rank_text(self, query: str, depth: int, predicate: All, now: float) -> list[Ranked]:
        """The best ``depth`` live user facts by BM25 alone (while the vector side loads):
        key = normalised BM25 x the confidence factor; cosine 0 (nothing was compared)."""
        allowed = self.allowed(predicate)
        if allowed is not None and not len(allowed):
            return []
        lex_ids, lex_scores = self.store.text_search(query, allowed)
        if not len(lex_ids):
            return []
        best = float(lex_scores.max())
        order = np.argsort(-lex_scores, kind="stable")[:max(depth, MIN_CANDIDATES)]
        top = lex_ids[order].tolist()
        confidence = self.store.confidences(top, now)  # the live user facts among them
        out = []
        for i, score in zip(top, lex_scores[order].tolist()):
            if i in confidence and best > 0:
                key = LEX_WEIGHT * (score / best) * confidence_factor(confidence[i])
                out.append(Ranked(i, key, 0.0, max(key, 0.0)))
        out.sort(key=lambda r: (-r.key, to_u64(r.id)))
        return out[:depth]

    def _search_both(self, query: str, qv: np.ndarray | None, n: int, allowed: np.ndarray | None,
                     now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[int, tuple[float, float]] | None]:
        """(query vector, BM25 ids, BM25 scores, the vector side's candidates for the top ``n``,
        and those candidates' ``scored`` when they were read while BM25 ran, else None).

        BM25 needs no query vector, so where the store says both sides take long enough
        (``parallel_search``) it runs on a pool thread while this one embeds the query and
        searches the vector index: the model, SQLite and FAISS all release the GIL, and a
        query costs the slower side instead of the sum. When the vector side finishes first,
        it reads its candidates' scores while it waits, leaving fewer to read afterwards.
        """
        store = self.store
        if self.pool is None or not store.parallel_search:
            lex_ids, lex_scores = store.text_search(query, allowed)
            if qv is None:
                qv = self.embedder.embed([query])[0]
            return qv, lex_ids, lex_scores, store.vector_candidates(qv, n, allowed), None
        try:
            text = self.pool.submit(store.text_search, query, allowed)
        except RuntimeError:  # the pool shuts down with its Runtime
            raise Internal("the store is closed") from None
        early = None
        try:
            if qv is None:
                qv = self.embedder.embed([query])[0]
            candidates = store.vector_candidates(qv, n, allowed)
            if not text.done():
                early = store.scored(qv, candidates.tolist(), now)
        finally:
            lex_ids, lex_scores = text.result()
        return qv, lex_ids, lex_scores, candidates, early


def _best(scored: dict[int, tuple[float, float]], candidates: np.ndarray,
          n: int) -> dict[int, float]:
    """{id: cosine} of the ``n`` live candidates of highest cosine (ties: ascending key)."""
    return {k: c for k, c, _ in top_scored(scored, candidates, n)}


def _member(ids: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``ids`` are in ``sorted_set`` (ascending int64)."""
    pos = np.minimum(np.searchsorted(sorted_set, ids), len(sorted_set) - 1)
    mask: np.ndarray = sorted_set[pos] == ids
    return mask


def _lookup(ids: np.ndarray, scores: np.ndarray, wanted: list[int]) -> dict[int, float]:
    """{id: score} for the ``wanted`` ids present in ``ids`` (ascending)."""
    if not len(ids) or not wanted:
        return {}
    w = np.asarray(wanted, dtype=np.int64)
    found = _member(w, ids)
    pos = np.searchsorted(ids, w[found])
    return dict(zip(w[found].tolist(), scores[pos].tolist()))

"""Hybrid ranking: SQLite FTS5 BM25 fused with vector similarity, then the confidence blend.

For a query q and a candidate fact f (docs/ranking.md has the why and the LoCoMo figures):

    lex(f)   = bm25(q, f) / max over candidates bm25     in [0, 1]   (0 when no term matches)
    fused(f) = w_vec * cos(q, f) + lex(f)               w_vec = 1 for a semantic embedder
                                                          (the 1 : 1 of the calibration), 0.5
                                                          for the hash embedder (LoCoMo-tuned)
    key(f)   = fused(f) * (1 + 0.5 * (2 * confidence(f) - 1))

Candidates: the vector side's top ``depth`` (exact or HNSW, restricted to the filter) unioned
with BM25's top ``depth`` (FTS5, same filter), each candidate scored on both sides exactly. The
BM25 query is the query's word tokens (FTS5 ``porter unicode61`` tokens, diacritics folded)
minus English stopwords, rarest first within a postings budget (``bounded_terms``), OR-ed;
with no term left the ranking is the vector one. In ``vector`` mode
(``VELESDB_MEMORY_RECALL_MODE=vector``) key(f) = (cos(q, f) + 1) / 2 * the same confidence
factor, applied to the vector top-k only, as the reference does. The returned score is always
the raw cosine; ``relevance`` (what recall_fused normalises) is max(key, 0) in hybrid mode and
max(cos, 0) in vector mode, so an unrelated fact weighs nothing there.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from dataclasses import dataclass

import numpy as np

from velesmem.embed import STOPWORDS, Embedder
from velesmem.ids import to_u64
from velesmem.memory import bm25
from velesmem.memory.filters import Condition
from velesmem.store import Store

SEMANTIC_VECTOR_WEIGHT = 1.0  # cosine : normalised BM25 = 1 : 1 (STACK_NOTES calibration)
HASH_VECTOR_WEIGHT = 0.5  # LoCoMo-tuned, docs/ranking.md
LEX_WEIGHT = 1.0
MIN_CANDIDATES = 32
MAX_QUERY_TERMS = 32
BM25_POSTINGS_BUDGET = 3_000  # most postings one BM25 query scores (rarest terms first)
DF_REFRESH_WRITES = 1_000  # a cached document frequency is re-read after this many writes
TERM_CACHE_MAX = 100_000
MAX_BOUND_IDS = 4_096  # ids bound as parameters (SQLite allows 32,766)
SEARCH_THREADS = 16  # pool threads for the vector side of concurrent hybrid recalls
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"  # the store's facts_fts tokenizer
_FTS_TOKEN = re.compile(r"[^\W_]+")




@dataclass(frozen=True)
class Ranked:
    """One ranked fact: its int64 id, rank key, raw cosine and non-negative relevance."""

    id: int
    key: float
    cosine: float
    relevance: float = 0.0


def fts_terms(query: str) -> list[str]:
    """The BM25 terms of a query: lowercase FTS5 tokens, stopwords dropped, first occurrences."""
    seen: dict[str, None] = {}
    for tok in _FTS_TOKEN.findall(query.lower()):
        if tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)[:MAX_QUERY_TERMS]


def fts_match(terms: list[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


def confidence_factor(confidence: float) -> float:
    return 1.0 + 0.5 * (2.0 * confidence - 1.0)


class Ranker:
    """Ranks user facts for a query under a filter, per the module docstring."""

    def __init__(self, store: Store, embedder: Embedder, mode: str) -> None:
        self.store = store
        self.embedder = embedder
        self.mode = mode
        self.vector_weight = SEMANTIC_VECTOR_WEIGHT if embedder.semantic else HASH_VECTOR_WEIGHT
        self.stats = TermStats(store)
        self.lengths = bm25.DocLengths()

    def rank(self, query: str, depth: int, cond: Condition, now: float) -> list[Ranked]:
        """The best ``depth`` live user facts matching ``cond``, best first."""
        index = self.store.index
        assert index is not None
        conn = self.store.reader()
        allowed = None
        if cond.ids is not None:
            # The ids whose metadata matches, from the side table alone: the vector index and
            # the FTS index hold user facts only, and the liveness check below drops any fact
            # expired or forgotten meanwhile.
            allowed = np.fromiter(chain.from_iterable(conn.execute(cond.ids, cond.params)),
                                  dtype=np.int64)
            if not len(allowed):
                return []
            if not np.all(allowed[1:] >= allowed[:-1]):  # one side-table range comes sorted
                allowed.sort()
        qv = self.embedder.embed([query])[0]
        if self.mode == "vector":
            cos = dict(index.search(qv, depth, allowed))
            lex: dict[int, float] = {}
            best = 0.0
        else:
            n = max(depth, MIN_CANDIDATES)
            # FAISS and SQLite both release the GIL: the vector search runs on a pool thread
            # while this one scores BM25, so a query costs the slower side, not the sum.
            search = _search_pool().submit(index.search, qv, n, allowed)
            try:
                lex_ids, lex_scores = self._bm25(conn, query, allowed)
            finally:
                cos = dict(search.result())
            best = float(lex_scores.max()) if len(lex_scores) else 0.0
            # the BM25 top n (ties: ascending rowid, as FTS5 returns them)
            top = lex_ids[np.argsort(-lex_scores, kind="stable")[:n]].tolist()
            missing = [i for i in top if i not in cos]
            if missing:
                cos.update(index.similarities(qv, missing))
                for i in missing:
                    cos.setdefault(i, 0.0)
            lex = _lookup(lex_ids, lex_scores, list(cos))
        confidences = live_confidences(conn, list(cos), now)
        out: list[Ranked] = []
        for i, c in cos.items():
            conf = confidences.get(i)
            if conf is None:
                continue  # gone since the search (forgotten, expired)
            factor = confidence_factor(conf)
            if self.mode == "vector":
                key = (c + 1.0) / 2.0 * factor
                out.append(Ranked(i, key, c, max(c, 0.0) * factor))
            else:
                lexical = lex.get(i, 0.0) / best if best > 0 else 0.0
                key = (self.vector_weight * c + LEX_WEIGHT * lexical) * factor
                out.append(Ranked(i, key, c, max(key, 0.0)))
        out.sort(key=lambda r: (-r.key, to_u64(r.id)))
        return out[:depth]

    def _bm25(self, conn: sqlite3.Connection, query: str,
              allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids ascending, BM25 > 0) of every fact matching the budget-bounded query terms,
        restricted to ``allowed`` (sorted int64 ids) when given."""
        terms = bounded_terms(conn, fts_terms(query), self.stats)
        stems = [self.stats.stems[t] for t in terms]
        if all(len(s) == 1 for s in stems):
            ids, scores = bm25.scores(conn, [s[0] for s in stems], self.lengths,
                                      self.store.text_generation)
        else:  # a word FTS5 splits into a phrase: let FTS5 score it
            ids, scores = _fts5_bm25(conn, terms)
        if allowed is not None and len(ids):
            keep = _member(ids, allowed)
            ids, scores = ids[keep], scores[keep]
        return ids, scores


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _search_pool() -> ThreadPoolExecutor:
    """The process-wide threads that run hybrid recall's vector side."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=SEARCH_THREADS,
                                           thread_name_prefix="velesmem-search")
    return _pool


def _fts5_bm25(conn: sqlite3.Connection, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    if not terms:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    rows = conn.execute("SELECT rowid, -bm25(facts_fts) FROM facts_fts WHERE facts_fts MATCH ? "
                        "ORDER BY rowid", (fts_match(terms),)).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ids, np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))


def _member(ids: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``ids`` are in ``sorted_set`` (ascending int64)."""
    pos = np.minimum(np.searchsorted(sorted_set, ids), len(sorted_set) - 1)
    return sorted_set[pos] == ids


def _lookup(ids: np.ndarray, scores: np.ndarray, wanted: list[int]) -> dict[int, float]:
    """{id: score} for the ``wanted`` ids present in ``ids`` (ascending)."""
    if not len(ids) or not wanted:
        return {}
    w = np.asarray(wanted, dtype=np.int64)
    found = _member(w, ids)
    pos = np.searchsorted(ids, w[found])
    return dict(zip(w[found].tolist(), scores[pos].tolist()))


class TermStats:
    """Per-store caches for the BM25 budget: the stems of query words (exact, kept) and the
    document frequency of each stem (re-read after DF_REFRESH_WRITES writes)."""

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self.stems: dict[str, tuple[str, ...]] = {}
        self.df: dict[str, tuple[int, int]] = {}

    def seq(self) -> int:
        return self.store.seq if self.store is not None else 0

    def trim(self) -> None:
        if len(self.stems) > TERM_CACHE_MAX:
            self.stems.clear()
        if len(self.df) > TERM_CACHE_MAX:
            self.df.clear()


def bounded_terms(conn: sqlite3.Connection, terms: list[str],
                  stats: TermStats | None = None) -> list[str]:
    """The query terms that match something, rarest first, while their summed document
    frequencies stay within BM25_POSTINGS_BUDGET (the rarest is always kept).

    BM25 must score every fact matching any term, so one very common term would make the query
    cost grow with the store; its idf is low, so leaving it out changes the ranking little.
    Document frequencies come from an fts5vocab view of the store's index; the query words are
    stemmed by a scratch FTS5 table with the same tokenizer, both in this connection's ``temp``.
    """
    if not terms:
        return []
    stats = stats if stats is not None else TermStats(None)
    stats.trim()
    unknown = [t for t in terms if t not in stats.stems]
    ready = False
    if unknown:
        _ensure_scratch(conn)
        ready = True
        conn.execute("INSERT INTO temp.q_fts (q_fts) VALUES ('delete-all')")
        conn.executemany("INSERT INTO temp.q_fts (rowid, w) VALUES (?, ?)",
                         list(enumerate(unknown)))
        found: dict[int, list[str]] = {}
        for term, doc in conn.execute("SELECT term, doc FROM temp.q_vocab"):
            found.setdefault(int(doc), []).append(term)
        for n, word in enumerate(unknown):
            stats.stems[word] = tuple(found.get(n, ()))
    seq = stats.seq()
    costs = []
    for n, term in enumerate(terms):
        cost = 0
        for stem in stats.stems[term]:
            cached = stats.df.get(stem)
            if cached is None or seq - cached[1] > DF_REFRESH_WRITES:
                if not ready:
                    _ensure_scratch(conn)
                    ready = True
                row = conn.execute("SELECT doc FROM temp.facts_vocab WHERE term = ?",
                                   (stem,)).fetchone()
                cached = (int(row[0]) if row else 0, seq)
                stats.df[stem] = cached
            cost += cached[0]
        if cost:
            costs.append((cost, n, term))
    costs.sort()
    kept, spent = [], 0
    for cost, _, term in costs:
        if kept and spent + cost > BM25_POSTINGS_BUDGET:
            break
        kept.append(term)
        spent += cost
    return kept


def _ensure_scratch(conn: sqlite3.Connection) -> None:
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'q_vocab'").fetchone():
        return
    conn.execute(f"CREATE VIRTUAL TABLE temp.q_fts USING fts5(w, content='', "
                 f"tokenize='{FTS_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE temp.q_vocab USING fts5vocab(temp, q_fts, 'instance')")
    conn.execute("CREATE VIRTUAL TABLE temp.facts_vocab USING fts5vocab(main, facts_fts, 'row')")


def live_confidences(conn: sqlite3.Connection, ids: list[int], now: float) -> dict[int, float]:
    """Confidence of each id (int64 key) still live and user-visible."""
    if not ids:
        return {}
    live = "kind IS NULL AND (expires_at IS NULL OR expires_at > ?)"
    if len(ids) > MAX_BOUND_IDS:  # beyond what is cheap to bind one by one
        return {int(i): float(c) for i, c in conn.execute(
            f"SELECT id, confidence FROM facts WHERE id IN (SELECT value FROM json_each(?)) "
            f"AND {live}", (json.dumps(ids), now))}
    marks = ",".join("?" * len(ids))
    return dict(conn.execute(f"SELECT id, confidence FROM facts WHERE id IN ({marks}) AND "
                             f"{live}", (*ids, now)).fetchall())

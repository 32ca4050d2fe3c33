"""The SQLite text index: FTS5 BM25 over user facts, scored with numpy (``bm25``).

A query becomes its word tokens (FTS5 ``porter unicode61`` tokens, diacritics folded) minus
English stopwords, rarest first within a postings budget (``bounded_terms``), OR-ed. One very
common term would make a query's cost grow with the store; its idf is low, so leaving it out
changes the ranking little. A stem's document frequency is counted from its postings (an
``fts5vocab`` 'instance' view of the store's index, which the scoring then reuses) and cached;
query words are stemmed by a scratch FTS5 table with the same tokenizer, both in each reader
connection's ``temp`` schema.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import numpy as np

from velesmem.store.sqlite import bm25
from velesmem.store.text import BM25_B, BM25_K1, query_terms

BM25_POSTINGS_BUDGET = 3_000  # most postings one BM25 query scores (rarest terms first)
DF_REFRESH_WRITES = 1_000  # a cached document frequency is re-read after this many writes
TERM_CACHE_MAX = 100_000
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"  # the store's facts_fts tokenizer


def fts_match(terms: list[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


class TermStats:
    """Per-store caches for the BM25 budget: the stems of query words (exact, kept) and the
    document frequency of each stem (re-read after DF_REFRESH_WRITES writes).

    Shared by every reader thread. A full cache is replaced by a new empty dict rather than
    cleared in place, and every reader works on the dicts it read once, so a concurrent trim
    never pulls an entry from under a query.
    """

    def __init__(self, seq: Callable[[], int] | None = None) -> None:
        self._seq = seq
        self.stems: dict[str, tuple[str, ...]] = {}
        self.df: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def seq(self) -> int:
        return self._seq() if self._seq is not None else 0

    def caches(self) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[int, int]]]:
        """The current (stems, df) dicts, fresh ones when either is over the cap."""
        with self._lock:
            if len(self.stems) > TERM_CACHE_MAX:
                self.stems = {}
            if len(self.df) > TERM_CACHE_MAX:
                self.df = {}
            return self.stems, self.df


def bounded_terms(conn: sqlite3.Connection, terms: list[str],
                  stats: TermStats | None = None) -> list[str]:
    """The query terms that match something, rarest first, while their summed document
    frequencies stay within BM25_POSTINGS_BUDGET (the rarest is always kept)."""
    return [term for term, _ in bounded_stems(conn, terms, stats)]


def bounded_stems(conn: sqlite3.Connection, terms: list[str], stats: TermStats | None = None,
                  postings: bm25.Postings | None = None,
                  ) -> list[tuple[str, tuple[str, ...]]]:
    """``bounded_terms`` with each kept term's FTS5 stems. A document frequency not cached is
    counted from the stem's postings (FTS5's row vocabulary walks them too, only to count),
    which are added to ``postings`` when given, for the scoring to reuse; a stem with more
    occurrences than the budget is counted by the vocabulary instead."""
    if not terms:
        return []
    stats = stats if stats is not None else TermStats()
    stems_cache, df_cache = stats.caches()
    stems = {t: stems_cache[t] for t in terms if t in stems_cache}
    unknown = list(dict.fromkeys(t for t in terms if t not in stems))
    if unknown:
        for word, found in zip(unknown, _stems_of(conn, unknown)):
            stems[word] = stems_cache[word] = found
    seq = stats.seq()
    # A cached frequency of 0 is re-read once any write has landed since: left as 0, the term
    # would be dropped from every query until the refresh, hiding the facts written after a
    # search for their words (a near-duplicate check searches a fact's words before writing it).
    stale = sorted({stem for term in terms for stem in stems[term]
                    if (cached := df_cache.get(stem)) is None
                    or seq - cached[1] > DF_REFRESH_WRITES
                    or (cached[0] == 0 and seq != cached[1])})
    if stale:
        fetched, over = bm25.postings_up_to(conn, stale, BM25_POSTINGS_BUDGET)
        if postings is not None:
            postings.update(fetched)
        counted = bm25.doc_frequencies(conn, over)
        for stem in stale:
            df_cache[stem] = (len(fetched[stem][0]) if stem in fetched else counted.get(stem, 0),
                              seq)
    costs = []
    for n, term in enumerate(terms):
        cost = sum(df_cache[stem][0] for stem in stems[term])
        if cost:
            costs.append((cost, n, term))
    costs.sort()
    kept: list[tuple[str, tuple[str, ...]]] = []
    spent = 0
    for cost, _, term in costs:
        if kept and spent + cost > BM25_POSTINGS_BUDGET:
            break
        kept.append((term, stems[term]))
        spent += cost
    return kept


def _stem(conn: sqlite3.Connection, words: list[str]) -> list[tuple[str, ...]]:
    """The FTS5 stems of each of ``words`` (a word may split into several, or none)."""
    conn.execute("INSERT INTO temp.q_fts (q_fts) VALUES ('delete-all')")
    conn.executemany("INSERT INTO temp.q_fts (rowid, w) VALUES (?, ?)", list(enumerate(words)))
    found: dict[int, list[str]] = {}
    for term, doc in conn.execute("SELECT term, doc FROM temp.q_vocab"):
        found.setdefault(int(doc), []).append(term)
    return [tuple(found.get(n, ())) for n in range(len(words))]


def _stems_of(conn: sqlite3.Connection, words: list[str]) -> list[tuple[str, ...]]:
    """``_stem``, making the connection's scratch tables first if they are missing (asking
    first would cost a statement on every query)."""
    try:
        return _stem(conn, words)
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
    _create_scratch(conn)
    return _stem(conn, words)


def _create_scratch(conn: sqlite3.Connection) -> None:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_fts USING fts5(w, content='', "
                 f"tokenize='{FTS_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_vocab USING fts5vocab(temp, q_fts, "
                 "'instance')")


class TextIndex:
    """BM25 search over the store's ``facts_fts`` (user facts only)."""

    def __init__(self, seq: Callable[[], int], generation: Callable[[], int]) -> None:
        self.stats = TermStats(seq)
        self.lengths = bm25.DocLengths()
        self._generation = generation

    def search(self, conn: sqlite3.Connection, query: str,
               allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids ascending, BM25 > 0) of every fact matching the budget-bounded query terms,
        restricted to ``allowed`` (sorted int64 ids) when given."""
        conn.execute("BEGIN")  # one snapshot: frequencies, postings, totals and lengths agree
        try:
            read: bm25.Postings = {}
            kept = bounded_stems(conn, query_terms(query), self.stats, read)
            if all(len(stems) == 1 for _, stems in kept):
                ids, scores = bm25.scores(conn, [stems[0] for _, stems in kept], self.lengths,
                                          self._generation(), k1=BM25_K1, b=BM25_B, known=read)
            else:  # a word FTS5 splits into a phrase: let FTS5 score it
                ids, scores = _fts5_bm25(conn, [term for term, _ in kept])
        finally:
            conn.execute("COMMIT")
        if allowed is not None and len(ids):
            keep = member(ids, allowed)
            ids, scores = ids[keep], scores[keep]
        return ids, scores


def _fts5_bm25(conn: sqlite3.Connection, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    if not terms:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    rows = conn.execute("SELECT rowid, -bm25(facts_fts) FROM facts_fts WHERE facts_fts MATCH ? "
                        "ORDER BY rowid", (fts_match(terms),)).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ids, np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))


def member(ids: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``ids`` are in ``sorted_set`` (ascending int64)."""
    if not len(sorted_set):
        return np.zeros(len(ids), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, ids), len(sorted_set) - 1)
    mask: np.ndarray = sorted_set[pos] == ids
    return mask

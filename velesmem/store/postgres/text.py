"""The PostgreSQL text index: BM25 over postings made by PostgreSQL's full-text search.

Writing a user fact stores the lexemes of ``to_tsvector('english', content)`` (PostgreSQL's
parser, Snowball English stemmer and stopword list) as ``fact_terms`` rows (lexeme, fact, term
frequency, fact length) and adds the fact to sharded corpus totals (``text_stats``: facts and
tokens, one row per connection slot, so concurrent writers never queue on one counter row).
A query's words (``velesmem.store.text``) are stemmed the same way, the rarest are kept within
a postings budget (as on SQLite: one very common word would make a query's cost grow with the
store, and its idf is low), and each kept lexeme's postings are one index range. Scores are
BM25 with the shared parameters (``velesmem.store.text``: k1 = 1.2, b = 0.1; idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6),
computed with numpy from exact corpus totals, so the fused ranking weighs the text side as the
SQLite backend does. Where the two differ: the stemmer (Snowball vs Porter), PostgreSQL's
stopwords leave the document side (so lengths count content words only), its parser keeps
``v1.2`` or ``a@b.c`` as one token, and diacritics are not folded.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
import psycopg

from velesmem.store.rows import scalar
from velesmem.store.text import BM25_B, BM25_K1, query_terms

TS_CONFIG = "english"
BM25_POSTINGS_BUDGET = 3_000  # most postings one query scores (rarest lexemes first)
IDF_FLOOR = 1e-6
STEM_CACHE_MAX = 100_000
DF_CACHE_S = 60.0  # an exact document frequency above the budget is re-counted after this
STAT_SHARDS = 16
Conn = psycopg.Connection[Any]

# Postings and length of one fact, and its share of the corpus totals (inside a write).
INDEX_SQL = f"""
    WITH t AS (SELECT lexeme, cardinality(positions) AS tf
               FROM unnest(to_tsvector('{TS_CONFIG}', %(content)s))),
         n AS (SELECT coalesce(sum(tf), 0)::integer AS dl FROM t),
         ins AS (INSERT INTO fact_terms (lexeme, id, tf, dl)
                 SELECT t.lexeme, %(id)s, t.tf, n.dl FROM t, n RETURNING 1),
         tot AS (INSERT INTO text_stats (shard, docs, tokens)
                 SELECT pg_backend_pid() %% {STAT_SHARDS}, 1, n.dl FROM n
                 ON CONFLICT (shard) DO UPDATE SET docs = text_stats.docs + excluded.docs,
                                                   tokens = text_stats.tokens + excluded.tokens
                 RETURNING 1)
    UPDATE facts SET ntokens = n.dl FROM n WHERE facts.id = %(id)s"""
# Take user facts out of the corpus totals (before deleting them or replacing their text);
# their postings go with the row (ON DELETE CASCADE) or with ``UNINDEX_SQL``.
UNCOUNT_SQL = f"""
    INSERT INTO text_stats (shard, docs, tokens)
    SELECT pg_backend_pid() %% {STAT_SHARDS}, -count(*), -coalesce(sum(ntokens), 0)
    FROM facts WHERE id = ANY(%b) AND kind IS NULL HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE SET docs = text_stats.docs + excluded.docs,
                                      tokens = text_stats.tokens + excluded.tokens"""
UNINDEX_SQL = "DELETE FROM fact_terms WHERE id = %s"
REBUILD_SQL = [
    "DELETE FROM fact_terms",
    "DELETE FROM text_stats",
    f"""WITH t AS (SELECT f.id, u.lexeme, cardinality(u.positions) AS tf FROM facts f,
                          unnest(to_tsvector('{TS_CONFIG}', f.content)) u
                   WHERE f.kind IS NULL),
             n AS (SELECT id, sum(tf)::integer AS dl FROM t GROUP BY id)
        INSERT INTO fact_terms (lexeme, id, tf, dl)
        SELECT t.lexeme, t.id, t.tf, n.dl FROM t JOIN n USING (id)""",
    f"""UPDATE facts f SET ntokens = coalesce((SELECT sum(cardinality(u.positions))
                FROM unnest(to_tsvector('{TS_CONFIG}', f.content)) u), 0)
        WHERE f.kind IS NULL""",
    "INSERT INTO text_stats (shard, docs, tokens) SELECT 0, count(*), coalesce(sum(ntokens), 0) "
    "FROM facts WHERE kind IS NULL",
]


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.float64)


class TextIndex:
    """BM25 search over ``fact_terms`` (user facts only); caches the stems of query words and
    the exact document frequency of lexemes too common to count on every query."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stems: dict[str, tuple[str, ...]] = {}
        self._df: dict[str, tuple[int, float]] = {}

    def stems(self, conn: Conn, terms: list[str]) -> list[str]:
        """The distinct lexemes of the query terms, in order (stopwords make none)."""
        with self._lock:
            if len(self._stems) > STEM_CACHE_MAX:
                self._stems = {}
            cache = self._stems
        unknown = [t for t in terms if t not in cache]
        if unknown:
            rows = conn.execute(
                f"SELECT t, ARRAY(SELECT lexeme FROM unnest(to_tsvector('{TS_CONFIG}', t))) "
                "FROM unnest(%s::text[]) AS t", (unknown,)).fetchall()
            for term, lexemes in rows:
                cache[term] = tuple(lexemes)
        seen: dict[str, None] = {}
        for t in terms:
            for lexeme in cache.get(t, ()):
                seen.setdefault(lexeme, None)
        return list(seen)

    def _bounded(self, conn: Conn, lexemes: list[str]) -> list[tuple[str, int]]:
        """(lexeme, document frequency) of the lexemes that match something, rarest first,
        while their summed frequencies stay within the budget (the rarest is always kept)."""
        cap = BM25_POSTINGS_BUDGET + 1
        rows = conn.execute(
            "SELECT l, (SELECT count(*) FROM (SELECT 1 FROM fact_terms WHERE lexeme = l "
            "LIMIT %s) s) FROM unnest(%s::text[]) AS l", (cap, lexemes)).fetchall()
        costs = sorted((int(df), n, lexeme) for n, (lexeme, df) in enumerate(rows) if df)
        kept: list[tuple[str, int]] = []
        spent = 0
        for df, _, lexeme in costs:
            if kept and spent + df > BM25_POSTINGS_BUDGET:
                break
            if df >= cap:  # only the rarest gets here: count it exactly (cached a while)
                df = self._exact_df(conn, lexeme)
            kept.append((lexeme, df))
            spent += df
        return kept

    def _exact_df(self, conn: Conn, lexeme: str) -> int:
        now = time.monotonic()
        with self._lock:
            cached = self._df.get(lexeme)
        if cached is not None and now - cached[1] < DF_CACHE_S:
            return cached[0]
        df = int(scalar(conn.execute("SELECT count(*) FROM fact_terms WHERE lexeme = %s",
                                     (lexeme,))))
        with self._lock:
            if len(self._df) > STEM_CACHE_MAX:
                self._df = {}
            self._df[lexeme] = (df, now)
        return df

    def search(self, conn: Conn, query: str,
               allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(fact keys ascending, BM25 > 0) of every user fact holding a kept query lexeme,
        restricted to ``allowed`` (sorted int64 keys) when given."""
        terms = query_terms(query)
        if not terms:
            return _empty()
        lexemes = self.stems(conn, terms)
        if not lexemes:
            return _empty()
        kept = self._bounded(conn, lexemes)
        if not kept:
            return _empty()
        rows = conn.execute(
            "SELECT lexeme, string_agg(int8send(id), ''::bytea), string_agg(int4send(tf), "
            "''::bytea), string_agg(int4send(dl), ''::bytea), (SELECT coalesce(sum(docs), 0) "
            "FROM text_stats), (SELECT coalesce(sum(tokens), 0) FROM text_stats) "
            "FROM fact_terms WHERE lexeme = ANY(%s::text[]) GROUP BY lexeme",
            ([lexeme for lexeme, _ in kept],)).fetchall()
        if not rows:
            return _empty()
        n_docs, n_tokens = int(rows[0][4]), int(rows[0][5])  # one snapshot with the postings
        avgdl = n_tokens / n_docs if n_docs > 0 else 1.0
        df = dict(kept)
        parts_doc, parts_score = [], []
        for lexeme, ids_b, tf_b, dl_b, _, _ in rows:
            docs = np.frombuffer(ids_b, dtype=">i8").astype(np.int64)
            tf = np.frombuffer(tf_b, dtype=">i4").astype(np.float64)
            dl = np.frombuffer(dl_b, dtype=">i4").astype(np.float64)
            hits = max(df.get(lexeme, len(docs)), len(docs))
            idf = math.log(max(n_docs - hits + 0.5, 1e-300) / (hits + 0.5))
            idf = idf if idf > 0 else IDF_FLOOR
            parts_doc.append(docs)
            parts_score.append(idf * (tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl)))
        if not parts_doc:
            return _empty()
        ids, inverse = np.unique(np.concatenate(parts_doc), return_inverse=True)
        scores = np.zeros(len(ids), dtype=np.float64)
        np.add.at(scores, inverse, np.concatenate(parts_score))
        if allowed is not None and len(ids):
            keep = member(ids, allowed)
            ids, scores = ids[keep], scores[keep]
        return ids, scores


def member(ids: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``ids`` are in ``sorted_set`` (ascending int64)."""
    if not len(sorted_set):
        return np.zeros(len(ids), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, ids), len(sorted_set) - 1)
    mask: np.ndarray = sorted_set[pos] == ids
    return mask

"""The PostgreSQL text index: BM25 scores (FTS5's formula, the shared parameters) from the
lexemes PostgreSQL makes, the postings budget keeps the rarest words, and the corpus totals stay
exact through every write path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from velesmem.store.postgres import text as pgtext
from velesmem.store.postgres.backend import PostgresStore
from velesmem.store.text import BM25_B, BM25_K1

from .conftest import NOW, key, write


def _lexemes(pg: PostgresStore, content: str) -> dict[str, int]:
    with pg._conn() as conn:
        rows = conn.execute("SELECT lexeme, cardinality(positions) FROM "
                            "unnest(to_tsvector('english', %s))", (content,)).fetchall()
    return dict(rows)


def _bm25(pg: PostgresStore, docs: list[str], query_lexemes: list[str]) -> dict[int, float]:
    """BM25 (FTS5's formula, the shared k1 and b), in plain Python, over what to_tsvector makes
    of each document."""
    bags = {key(d): _lexemes(pg, d) for d in docs}
    n = len(bags)
    avgdl = sum(sum(b.values()) for b in bags.values()) / n
    out: dict[int, float] = {}
    for lexeme in query_lexemes:
        df = sum(1 for b in bags.values() if lexeme in b)
        idf = math.log((n - df + 0.5) / (df + 0.5))
        idf = idf if idf > 0 else 1e-6
        for k, bag in bags.items():
            tf = bag.get(lexeme, 0)
            if tf:
                dl = sum(bag.values())
                out[k] = out.get(k, 0.0) + idf * tf * (BM25_K1 + 1) / (
                    tf + BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl))
    return out


def test_scores_are_bm25_over_postgres_lexemes(pg: PostgresStore) -> None:
    docs = ["the cache layer broke under load", "caching the disk cache twice",
            "an unrelated network note", "load balancers and caches", "running runners ran"]
    for d in docs:
        pg.remember(write(d)).result()
    ids, scores = pg.text_search("cache loads running", None)
    want = _bm25(pg, docs, ["cach", "load", "run"])
    assert ids.tolist() == sorted(want)
    for i, s in zip(ids.tolist(), scores.tolist()):
        assert s == pytest.approx(want[i], rel=1e-9)


def test_the_budget_keeps_the_rarest_lexemes(pg: PostgresStore,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(40):
        pg.remember(write(f"common groups running note {i}")).result()
    pg.remember(write("rare happiness entry")).result()
    with pg._conn() as conn:
        assert [t for t, _ in pg.text._bounded(conn, ["group", "happi", "absent"])] == [
            "happi", "group"]
        monkeypatch.setattr(pgtext, "BM25_POSTINGS_BUDGET", 10)
        assert [t for t, _ in pg.text._bounded(conn, ["group", "happi"])] == ["happi"]
        # the rarest is always kept, with its exact document frequency
        assert pg.text._bounded(conn, ["group"]) == [("group", 40)]
    ids, _ = pg.text_search("happiness groups", None)
    assert ids.tolist() == [key("rare happiness entry")]


def _totals(pg: PostgresStore) -> tuple[int, int]:
    with pg._conn() as conn:
        row = conn.execute("SELECT sum(docs), sum(tokens) FROM text_stats").fetchone()
    return int(row[0] or 0), int(row[1] or 0)


def test_corpus_totals_follow_every_write(pg: PostgresStore) -> None:
    pg.remember(write("alpha beta gamma")).result()
    pg.remember(write("delta epsilon", expires_at=NOW + 5)).result()
    pg.remember(write("alpha beta gamma", metadata='{"v":2}')).result()  # update in place
    assert _totals(pg) == (2, 5)
    pg.put_internal(key("scaffold"), "internal words never count", "{}", "ctx_source",
                    NOW).result()
    assert _totals(pg) == (2, 5)
    pg.forget(key("alpha beta gamma"), NOW).result()
    assert _totals(pg) == (1, 2)
    assert pg.purge_expired(NOW + 6).result() == 1
    assert _totals(pg) == (0, 0)
    assert pg.verify() == []


def test_allowed_restricts_and_stopwords_alone_find_nothing(pg: PostgresStore) -> None:
    pg.remember(write("indexing pipelines")).result()
    pg.remember(write("index pipeline notes")).result()
    ids, _ = pg.text_search("indexes", np.asarray(sorted([key("index pipeline notes")]),
                                                  dtype=np.int64))
    assert ids.tolist() == [key("index pipeline notes")]
    assert pg.text_search("the and of", None)[0].tolist() == []

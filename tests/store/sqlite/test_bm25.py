"""bm25.scores reproduces FTS5's bm25() over the store's own index."""

from __future__ import annotations

import random

import numpy as np
import pytest

from velesmem.ids import to_i64
from velesmem.memory import MemoryService
from velesmem.store.sqlite import bm25
from velesmem.store.sqlite.text import TermStats, bounded_stems, fts_match
from velesmem.store.text import query_terms

WORDS = ["cache", "caches", "caching", "lock", "locks", "disk", "net", "café", "cafe", "group",
         "groups", "grouped", "deploy", "deploys", "alpha", "beta", "x1", "x2"]


def fts5_reference(conn, terms: list[str]) -> dict[int, float]:
    return dict(conn.execute("SELECT rowid, -bm25(facts_fts) FROM facts_fts WHERE facts_fts "
                             "MATCH ?", (fts_match(terms),)).fetchall())


def test_scores_equal_fts5_bm25(mem: MemoryService) -> None:
    rng = random.Random(5)
    ids = []
    for n in range(300):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        ids.append(mem.remember(" ".join(words) + f" n{n}").id)
    for fid in ids[::7]:
        mem.forget(fid)
    conn = mem.store.reader()
    stats = TermStats()
    lengths = bm25.DocLengths()
    for _ in range(60):
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
        kept = bounded_stems(conn, query_terms(query), stats)
        terms = [t for t, _ in kept]
        stems = [s for _, s in kept]
        assert all(len(s) == 1 for s in stems)
        got_ids, got = bm25.scores(conn, [s[0] for s in stems], lengths, 0)
        want = fts5_reference(conn, terms)
        assert got_ids.tolist() == sorted(want)
        assert np.allclose(got, [want[i] for i in got_ids.tolist()], rtol=1e-12, atol=0)


def test_doc_lengths_follow_new_rows_and_reload_on_a_new_generation(mem: MemoryService) -> None:
    first = [mem.remember(f"{'word ' * (n + 1)}n{n}").id for n in range(5)]
    conn = mem.store.reader()
    lengths = bm25.DocLengths()
    keys = np.asarray([to_i64(i) for i in first], dtype=np.int64)
    assert lengths.get(conn, keys, 0).tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    later = to_i64(mem.remember("one two three four five six seven eight nine ten").id)
    both = np.asarray([later, keys[0]], dtype=np.int64)
    assert lengths.get(conn, both, 0).tolist() == [10.0, 2.0]  # fetched on demand
    assert lengths.get(conn, both, 1).tolist() == [10.0, 2.0]  # reloaded whole
    assert lengths.get(conn, np.asarray([12345], dtype=np.int64), 1).tolist() == [0.0]


def test_doc_lengths_merged_from_rows_fetched_on_demand_stay_right(
        mem: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "MERGE_MIN", 4)
    conn = mem.store.reader()
    lengths = bm25.DocLengths()
    assert lengths.get(conn, np.asarray([1], dtype=np.int64), 0).tolist() == [0.0]  # loads: empty
    keys = [to_i64(mem.remember(f"{'word ' * (n + 1)}n{n}").id) for n in range(12)]
    for n, key in enumerate(keys):  # one at a time: merged in after every few
        assert lengths.get(conn, np.asarray([key], dtype=np.int64), 0).tolist() == [n + 2.0]
    every = np.asarray(keys[::-1], dtype=np.int64)
    assert lengths.get(conn, every, 0).tolist() == [n + 2.0 for n in range(12)][::-1]


def test_the_length_normalisation_is_a_parameter(mem: MemoryService) -> None:
    """``b`` weighs a fact's length: at 0 a short and a long fact with the term once score the
    same; at FTS5's 0.75 the short one wins."""
    short = to_i64(mem.remember("kafka").id)
    long = to_i64(mem.remember("kafka and many more words in a much longer fact").id)
    conn = mem.store.reader()
    stems = bounded_stems(conn, ["kafka"], TermStats())[0][1]
    ids, flat = bm25.scores(conn, list(stems), bm25.DocLengths(), 0, b=0.0)
    got = dict(zip(ids.tolist(), flat.tolist()))
    assert abs(got[short] - got[long]) < 1e-12
    ids, normed = bm25.scores(conn, list(stems), bm25.DocLengths(), 0)
    got = dict(zip(ids.tolist(), normed.tolist()))
    assert got[short] > got[long]


def test_a_word_searched_before_any_fact_holds_it_is_found_once_one_does(mem: MemoryService) -> None:
    """A frequency of 0 cached by a search (a near-duplicate check searches a fact's words just
    before writing it) is re-read after the next write, or the word stays out of every query."""
    mem.remember("unrelated words only")
    writes = [0]
    stats = TermStats(lambda: writes[0])
    assert bounded_stems(mem.store.reader(), ["zebra"], stats) == []
    mem.remember("zebra crossing near the office")
    writes[0] += 1
    assert [term for term, _ in bounded_stems(mem.store.reader(), ["zebra"], stats)] == ["zebra"]

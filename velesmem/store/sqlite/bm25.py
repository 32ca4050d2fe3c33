"""FTS5's bm25(), computed from the index's postings with numpy.

FTS5's bm25() reads each matching row's size and position lists one row at a time (about 2 µs a
row, 1.6 ms for a typical 700-row query at 100k facts). Reading the few, budget-bounded query
terms' postings from an ``fts5vocab`` 'instance' view, the row sizes from memory (``DocLengths``,
loaded from the ``_docsize`` table) and the row and token totals from the
'averages' record, then applying FTS5's formula (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) /
(n + 0.5)) floored at 1e-6, summed over the query's phrases) gives the same scores, to rounding,
several times faster. tests/memory/test_bm25.py checks them against bm25().
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from velesmem.store.rows import scalar

K1 = 1.2
B = 0.75  # FTS5's own length normalisation (``scores`` takes another: see text.BM25_B)
IDF_FLOOR = 1e-6
FTS_TABLE = "facts_fts"
AVERAGES_ROWID = 1  # FTS5's record of the row count and the token count per column
MERGE_MIN = 512  # rows fetched on demand before they are merged into the sorted arrays (a list
# comprehension over a dict per query costs more than the occasional merge)


def _varint(blob: bytes, pos: int) -> tuple[int, int]:
    """An FTS5 (SQLite 4-style big-endian, 7 bits a byte) varint at ``pos``, and the next pos."""
    value = 0
    while True:
        byte = blob[pos]
        pos += 1
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos


class DocLengths:
    """Token counts of the FTS rows by rowid: every row's loaded once into sorted arrays (about
    50 ms per 100k rows, at the first use), rows added since fetched on demand and merged in
    from time to time. A fact's id is the hash of its text, so a row's length only changes when
    a hash collision replaces the text; the writer then bumps the store's ``text_generation``
    and the table is loaded afresh. Rows deleted since stay in the arrays, unused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation: int | None = None
        self._ids = np.zeros(0, np.int64)
        self._lengths = np.zeros(0, np.float64)
        self._extra: dict[int, int] = {}

    def get(self, conn: sqlite3.Connection, ids: np.ndarray, generation: int) -> np.ndarray:
        """The token count of each rowid in ``ids`` (int64), as float64 in the same order."""
        with self._lock:
            if generation != self._generation:
                self._load(conn, generation)
            sorted_ids, lengths, extra = self._ids, self._lengths, self._extra
        out = np.zeros(len(ids), np.float64)
        if len(sorted_ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = sorted_ids[pos] == ids
            out[hit] = lengths[pos[hit]]
        else:
            hit = np.zeros(len(ids), dtype=bool)
        if hit.all():
            return out
        rest = ids[~hit].tolist()
        missing = [i for i in rest if i not in extra]
        if missing:
            found = {int(i): _size(sz) for i, sz in conn.execute(
                f"SELECT id, sz FROM {FTS_TABLE}_docsize WHERE id IN "
                "(SELECT value FROM json_each(?))", (str(missing),))}
            with self._lock:
                if generation == self._generation:  # else a text changed meanwhile
                    self._extra.update(found)
                    if len(self._extra) > max(MERGE_MIN, len(self._ids) // 8):
                        self._merge()
            extra = {**extra, **found}
        out[~hit] = [extra.get(i, 0) for i in rest]
        return out

    def _load(self, conn: sqlite3.Connection, generation: int) -> None:
        rows = conn.execute(f"SELECT id, sz FROM {FTS_TABLE}_docsize").fetchall()
        ids = np.fromiter((r[0] for r in rows), np.int64, count=len(rows))
        lengths = np.fromiter((_size(r[1]) for r in rows), np.float64, count=len(rows))
        order = np.argsort(ids)
        self._ids, self._lengths, self._extra = ids[order], lengths[order], {}
        self._generation = generation

    def _merge(self) -> None:
        ids = np.concatenate([self._ids, np.fromiter(self._extra, np.int64, len(self._extra))])
        lengths = np.concatenate([self._lengths, np.fromiter(self._extra.values(), np.float64,
                                                              len(self._extra))])
        order = np.argsort(ids)
        self._ids, self._lengths, self._extra = ids[order], lengths[order], {}


def _size(blob: bytes) -> int:
    """The row's token count: the first varint of its ``_docsize`` record (one column)."""
    return blob[0] if blob[0] < 0x80 else _varint(blob, 0)[0]


# Per stem, one string of the doc of every occurrence: a row per occurrence costs Python more
# than SQLite spends finding it.
_POSTINGS = ("SELECT term, group_concat(doc) FROM temp.facts_inst WHERE term IN ({}) "
             "GROUP BY term")
_POSTINGS_UP_TO = ("SELECT group_concat(doc) FROM (SELECT doc FROM temp.facts_inst "
                   "WHERE term = ? LIMIT ?)")
_DOC_FREQUENCIES = "SELECT term, doc FROM temp.facts_vocab WHERE term IN ({})"
STEMS_PER_STATEMENT = 500

Postings = dict[str, tuple[np.ndarray, np.ndarray]]  # stem → (docs ascending, occurrences)
T = TypeVar("T")


def ensure_views(conn: sqlite3.Connection) -> None:
    """The per-connection fts5vocab views of the store's index (in ``temp``): 'instance' for
    postings, 'row' for document frequencies."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.facts_inst USING fts5vocab(main, "
                 f"{FTS_TABLE}, 'instance')")
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.facts_vocab USING fts5vocab(main, "
                 f"{FTS_TABLE}, 'row')")


def _with_views(conn: sqlite3.Connection, read: Callable[[sqlite3.Connection], T]) -> T:
    """``read(conn)``, making the views first if missing (asking first costs a statement)."""
    try:
        return read(conn)
    except sqlite3.OperationalError as exc:  # the views are made at a connection's first query
        if "no such table" not in str(exc):
            raise
    ensure_views(conn)
    return read(conn)


def _per_stem(conn: sqlite3.Connection, sql: str, stems: list[str]) -> list[tuple[str, T]]:
    """The (stem, value) rows of ``sql`` (its ``IN ({})`` bound to the stems), one statement
    per ``STEMS_PER_STATEMENT`` stems."""
    rows: list[tuple[str, T]] = []
    for start in range(0, len(stems), STEMS_PER_STATEMENT):
        chunk = stems[start:start + STEMS_PER_STATEMENT]
        rows.extend(conn.execute(sql.format(",".join("?" * len(chunk))), chunk))
    return rows


def postings(conn: sqlite3.Connection, stems: list[str]) -> Postings:
    """The postings of the ``stems`` some row holds, in one statement per 500 stems."""
    def read(conn: sqlite3.Connection) -> Postings:
        rows: list[tuple[str, str]] = _per_stem(conn, _POSTINGS, stems)
        return {stem: _parse(text) for stem, text in rows}
    return _with_views(conn, read) if stems else {}


def postings_up_to(conn: sqlite3.Connection, stems: list[str],
                   cap: int) -> tuple[Postings, list[str]]:
    """(the postings of each stem with at most ``cap`` occurrences, the stems with more): a
    stem found in every fact is not walked to its end."""
    def read(conn: sqlite3.Connection) -> tuple[Postings, list[str]]:
        found: Postings = {}
        over = []
        for stem in stems:
            text = scalar(conn.execute(_POSTINGS_UP_TO, (stem, cap + 1)))
            if text is None:
                continue
            if text.count(",") >= cap:
                over.append(stem)
            else:
                found[stem] = _parse(text)
        return found, over
    return _with_views(conn, read)


def doc_frequencies(conn: sqlite3.Connection, stems: list[str]) -> dict[str, int]:
    """How many rows hold each of ``stems`` (a stem no row holds is left out)."""
    def read(conn: sqlite3.Connection) -> dict[str, int]:
        return dict(_per_stem(conn, _DOC_FREQUENCIES, stems))
    return _with_views(conn, read) if stems else {}


def _parse(text: str) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(np.array(text.split(","), dtype=np.int64), return_counts=True)


def scores(conn: sqlite3.Connection, stems: list[str], lengths: DocLengths,
           generation: int, *, k1: float = K1, b: float = B,
           known: Postings | None = None,
           ) -> tuple[np.ndarray, np.ndarray]:
    """(rowids ascending, bm25 > 0) of every row holding one of ``stems``, each stem one
    single-token phrase of an OR query (a stem given twice counts twice, as in FTS5); with the
    default ``k1``/``b``, FTS5's own bm25(). ``known``: postings already read in the caller's
    transaction."""
    if conn.in_transaction:  # the caller's snapshot
        return _scores(conn, stems, lengths, generation, k1, b, known or {})
    conn.execute("BEGIN")  # one snapshot: totals, postings and lengths must agree
    try:
        return _scores(conn, stems, lengths, generation, k1, b, known or {})
    finally:
        conn.execute("COMMIT")


def _scores(conn: sqlite3.Connection, stems: list[str], lengths: DocLengths,
            generation: int, k1: float, b: float,
            known: Postings) -> tuple[np.ndarray, np.ndarray]:
    row = conn.execute(f"SELECT block FROM {FTS_TABLE}_data WHERE id = ?",
                       (AVERAGES_ROWID,)).fetchone()
    if row is None or not stems:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    n_rows, pos = _varint(row[0], 0)
    n_tokens, _ = _varint(row[0], pos)
    avgdl = n_tokens / n_rows if n_rows else 1.0
    found = {**known, **postings(conn, [s for s in dict.fromkeys(stems) if s not in known])}
    parts_doc, parts_tf, parts_idf = [], [], []
    for stem in stems:
        if stem not in found:
            continue
        docs, tf = found[stem]
        hits = len(docs)
        idf = math.log(max(n_rows - hits + 0.5, 1e-300) / (hits + 0.5))
        parts_doc.append(docs)
        parts_tf.append(tf)
        parts_idf.append(np.full(hits, idf if idf > 0 else IDF_FLOOR))
    if not parts_doc:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    docs = np.concatenate(parts_doc)
    uniq, inverse = np.unique(docs, return_inverse=True)
    dl = lengths.get(conn, uniq, generation)[inverse]
    tf = np.concatenate(parts_tf).astype(np.float64)
    part = np.concatenate(parts_idf) * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * dl / avgdl))
    # bincount adds each doc's parts in stem order, as FTS5 sums its phrases
    return uniq, np.bincount(inverse, weights=part, minlength=len(uniq))

"""Search in ``VectorIndex``: exact scans for small sets, HNSW with selectors for big ones, the
pending buffer merged in, and every candidate rescored from the exact vectors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import faiss
import numpy as np

from velesmem.store.sqlite import vector_index as vi
from velesmem.store.sqlite.vector_state import VectorState


class SearchPart(VectorState):
    """Top-n by inner product among the live vectors (the read lock held while searching)."""

    def search(self, query: np.ndarray, n: int,
               allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-``n`` live ids by exact inner product, best first (ties by id); ``allowed`` (int64
        ids) restricts the search to those ids and returns the true top-n among them when exact."""
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(self.dimension)
        return self._rescore(q, self.candidates(query, n, allowed), n)

    def search_many(self, queries: Sequence[np.ndarray],
                    ns: Sequence[int]) -> list[list[tuple[int, float]]]:
        """``search(query, n)`` of each query and its ``n`` (a batch: the curation lane's), the
        same ids with the same exact scores, in one pass: the pending
        buffer scored against every query in one matrix product, its float32 scores kept
        within their own small error rather than the 8-bit one, and the exact vectors of every
        query's candidates read in one statement."""
        qs = [np.ascontiguousarray(q, dtype=np.float32).reshape(self.dimension) for q in queries]
        windows = self._windows(qs, ns)
        kept = [_near_top(ids, approx, err, n) for ids, approx, err, n in windows]
        # a window holding many is narrowed by the exact scores of its best (see ``_tighten``)
        wide = {i: ids[np.argsort(-approx, kind="stable")[:max(vi.TIGHTEN_FIRST, 2 * n)]]
                for i, (ids, approx, _, n) in enumerate(windows)
                if len(kept[i]) > max(vi.TIGHTEN_ABOVE, 2 * n)}
        read = _Read(self.exact_vectors, np.concatenate([np.zeros(0, np.int64), *wide.values()]))
        for i, first in wide.items():
            ids, approx, err, n = windows[i]
            found, vectors = read.subset(first)
            if len(found) >= n:  # else forgotten meanwhile: the whole window stays
                exact = vectors @ qs[i]
                nth = float(np.partition(exact, len(exact) - n)[len(exact) - n])
                kept[i] = ids[approx + err >= nth]
        read.more(np.concatenate([np.zeros(0, np.int64), *kept]))
        out: list[list[tuple[int, float]]] = []
        for q, n, ids in zip(qs, ns, kept, strict=True):
            found, vectors = read.subset(ids)
            # each row's product alone, as ``_rescore`` takes it: the same scores as ``search``
            sims = np.einsum("ij,j->i", vectors, q) if len(found) else np.zeros(0, np.float32)
            out.append(vi.top_n(sims, found, n))
        return out

    def _windows(self, qs: list[np.ndarray],
                 ns: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        """Each query's candidates before they are narrowed: (ids, approximate scores, how far
        each may be from its exact score, n); the pending buffer's float32 scores from one
        product for all queries, within the float32 summation's error."""
        vi.single_thread()
        none = np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.float32)
        out: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        with self.lock.read():
            if self.live_count == 0 or not qs:
                return [(*none, n) for n in ns]
            pending_ids, pending = none[0], np.zeros((0, len(qs)), np.float32)
            if self._p_rows:
                live = slice(self._p_head, self._p_tail)
                rows = np.flatnonzero(self._p_alive[live])
                pending_ids = self._p_ids[live][rows]
                pending = (self._p_vecs[live] @ np.stack(qs, axis=1))[rows]
            live_main = self._n - self._n_dead
            for j, (q, n) in enumerate(zip(qs, ns, strict=True)):
                if n <= 0:
                    out.append((*none, n))
                    continue
                float_err = vi.SUM_REL_ERR * float(np.linalg.norm(q)) * self._max_norm
                main = none[:2]
                if live_main > vi.EXACT_SCAN_MAX:
                    main = self._hnsw(q.reshape(1, -1), n, self._not_dead_selector(), live_main)
                elif live_main:
                    main = self._scan(q.reshape(1, -1), n, None, live_main, self._error_bound(q))
                err = np.full(len(main[0]) + len(pending_ids), float_err, np.float32)
                err[:len(main[0])] = self._error_bound(q)
                out.append((np.concatenate([main[0], pending_ids]),
                            np.concatenate([main[1], pending[:, j]]), err, n))
        return out

    def candidates(self, query: np.ndarray, n: int,
                   allowed: np.ndarray | None = None) -> np.ndarray:
        """The live ids ``search`` rescores: its top ``n``, and more where 8-bit scores lie too
        close to the n-th to tell apart (int64, in no particular order)."""
        vi.single_thread()
        self._last_search = time.monotonic()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dimension)
        with self.lock.read():
            if n <= 0 or self.live_count == 0:
                return np.zeros(0, np.int64)
            bound = self._error_bound(q[0])
            pending = self._pending_approx(q[0], allowed)
            if allowed is None:
                live_main = self._n - self._n_dead
                if live_main <= vi.EXACT_SCAN_MAX:
                    main = self._scan(q, n, None, live_main, bound)
                else:
                    main = self._hnsw(q, n, self._not_dead_selector(), live_main)
            else:
                rows = self._rows_of(allowed)
                if len(rows) <= vi.EXACT_FILTER_MAX:
                    main = self._scan(q, n, rows, len(rows), bound)
                else:
                    main = self._hnsw_rows(q, n, rows)
        ids = np.concatenate([main[0], pending[0]])
        approx = np.concatenate([main[1], pending[1]])
        kept = vi.near_top(ids, approx, n, bound)
        if len(kept) > max(vi.TIGHTEN_ABOVE, 2 * n):
            kept = self._tighten(q[0], ids, approx, n, bound)
        return kept

    def _tighten(self, q: np.ndarray, ids: np.ndarray, approx: np.ndarray, n: int,
                 bound: float) -> np.ndarray:
        """Fewer candidates where the 8-bit window holds many (dense queries: |q|_1 makes the
        bound wide): the exact scores of the best ``TIGHTEN_FIRST`` (or 2n) by 8-bit score give an
        n-th best exact score s; a row whose approximate score is below s - bound cannot reach
        it, so only the others stay candidates."""
        first = ids[np.argsort(-approx, kind="stable")[:max(vi.TIGHTEN_FIRST, 2 * n)]]
        found, vectors = self.exact_vectors(first)
        if len(found) < n:  # forgotten meanwhile: keep the whole window
            return vi.near_top(ids, approx, n, bound)
        exact = vectors @ q
        nth = float(np.partition(exact, len(exact) - n)[len(exact) - n])
        kept: np.ndarray = ids[approx >= nth - bound]
        return kept

    def _error_bound(self, q: np.ndarray) -> float:
        """How far an 8-bit score may be from the exact one, for any vector of the index: half
        a step per component (plus how far a component was ever clipped) times |q|_1, and the
        float32 summation."""
        per_component = vi.SQ8_ABS_ERR + max(0.0, self._max_abs - vi.SQ8_RANGE)
        return (per_component * float(np.abs(q).sum())
                + vi.SUM_REL_ERR * float(np.linalg.norm(q)) * self._max_norm)

    def _rescore(self, q: np.ndarray, ids: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The top ``n`` of ``ids`` by exact inner product with their stored vectors."""
        found, vectors = self.exact_vectors(ids)
        # einsum: each row's product alone, as ``scored`` takes it (a BLAS product's rounding
        # depends on its batch, and equal vectors must tie)
        sims = np.einsum("ij,j->i", vectors, q) if len(found) else np.zeros(0, np.float32)
        return vi.top_n(sims, found, n)

    def _pending_approx(self, q: np.ndarray,
                        allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if not self._p_rows:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        live = slice(self._p_head, self._p_tail)
        rows = np.flatnonzero(self._p_alive[live])
        ids = self._p_ids[live][rows]
        if allowed is not None:
            keep = np.isin(ids, allowed)
            return ids[keep], self._p_vecs[live][rows[keep]] @ q
        return ids, (self._p_vecs[live] @ q)[rows]  # a view: the small-index scan copies nothing

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The live HNSW rows holding ``ids`` (hold a lock), found with numpy: binary search in
        a sorted copy of the ids of rows [0, base) (re-sorted once rows added since pass an
        eighth of it), and in the few rows added since."""
        n = self._n
        sorted_ids, sorted_rows, base_n = self._sorted_base()
        ids = np.asarray(ids, dtype=np.int64)
        found = np.zeros(0, np.int64)
        if len(sorted_ids) and len(ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = sorted_ids[pos] == ids
            found = sorted_rows[pos[hit]]
        if n > base_n and len(ids):
            tail = self._row_ids[base_n:n]
            wanted = ids if np.all(ids[1:] >= ids[:-1]) else np.sort(ids)
            pos = np.minimum(np.searchsorted(wanted, tail), len(wanted) - 1)
            found = np.concatenate([found, np.flatnonzero(wanted[pos] == tail) + base_n])
        return found[~self._dead[found]] if len(found) else found

    def _sorted_base(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The sorted ids of rows [0, base), their rows, and base (hold a lock), re-sorted once
        the rows added since pass an eighth of it."""
        n = self._n
        base = self._sorted
        if base is None or n - base[2] > max(vi.SORTED_REBUILD_MIN, base[2] // 8):
            order = np.argsort(self._row_ids[:n], kind="stable")
            base = (self._row_ids[:n][order], order.astype(np.int64), n)
            self._sorted = base
        return base

    def _lookup(self, ids: np.ndarray) -> np.ndarray:
        """The HNSW row of each of ``ids``, tombstoned ones included, -1 where none (hold a
        lock): a binary search in the sorted rows, a scan of the few added since."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        if not len(ids) or not self._n:
            return out
        sorted_ids, sorted_rows, base_n = self._sorted_base()
        if len(sorted_ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = sorted_ids[pos] == ids
            out[hit] = sorted_rows[pos[hit]]
        if self._n > base_n:
            tail = self._row_ids[base_n:self._n]
            if len(ids) <= vi.LOOKUP_SCAN_MAX:
                for k in np.flatnonzero(out < 0).tolist():
                    at = np.flatnonzero(tail == ids[k])
                    if len(at):
                        out[k] = base_n + int(at[0])
            else:
                tail_ids, order = self._sorted_tail(base_n)
                pos = np.minimum(np.searchsorted(tail_ids, ids), len(tail_ids) - 1)
                hit = (tail_ids[pos] == ids) & (out < 0)
                out[hit] = base_n + order[pos[hit]]
        return out

    def _sorted_tail(self, base_n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids of rows [base_n, n) sorted, and their offsets from base_n (hold a lock),
        kept until a row is added or the base is re-sorted: a search's lookup of its candidates
        among the rows added since would sort them each time."""
        key = (base_n, self._n)
        cached = self._tail
        if cached is None or cached[0] != key:
            tail = self._row_ids[base_n:self._n]
            order = np.argsort(tail, kind="stable")
            cached = (key, tail[order], order)
            self._tail = cached
        return cached[1], cached[2]

    def _scan(self, q: np.ndarray, n: int, rows: np.ndarray | None, count: int,
              bound: float) -> tuple[np.ndarray, np.ndarray]:
        """A flat scan of the 8-bit storage (the live rows, or ``rows``): every row whose
        8-bit score is within twice ``bound`` of the n-th best, so the exact top n is among
        them (ids, 8-bit scores)."""
        if count == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        _, storage = vi.faiss_parts(self._index)
        params, packed = None, None
        if rows is not None or self._n_dead:
            bits = ~self._dead[: self._n] if rows is None else np.zeros(self._n, dtype=bool)
            if rows is not None:
                bits[rows] = True
            packed = np.packbits(bits, bitorder="little")
            params = faiss.SearchParameters()
            params.sel = faiss.IDSelectorBitmap(self._n, faiss.swig_ptr(packed))
        k = min(count, n + max(n, vi.APPROX_EXTRA))
        while True:
            dist, labels = storage.search(q, k, params=params)
            if k >= count or dist[0][k - 1] < dist[0][min(n, k) - 1] - 2 * bound:
                break
            k = min(count, 4 * k)
        del packed  # only now may the bitmap the selector points into go
        keep = labels[0] >= 0
        return self._row_ids[labels[0][keep]], dist[0][keep]

    def _not_dead_selector(self) -> faiss.IDSelector | None:
        if self._n_dead == 0:
            return None
        if self._not_dead_sel is None:
            batch = faiss.IDSelectorBatch(self._row_ids[: self._n][self._dead[: self._n]])
            self._not_dead_sel = faiss.IDSelectorNot(batch)
            self._sel_keep = (batch,)  # the Not selector does not own the batch
        return self._not_dead_sel

    def _hnsw(self, q: np.ndarray, n: int, sel: faiss.IDSelector | None,
              candidates: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(max(n, vi.RESCORE_CANDIDATES), candidates)  # more than n: rescored, then cut
        selectivity = candidates / max(self._n, 1)
        ef = int(min(vi.MAX_EF_SEARCH, max(vi.HNSW_EF_SEARCH, n) / max(selectivity, 1e-6)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, n))
        if sel is not None:
            params.sel = sel
        dist, labels = self._index.search(q, n, params=params)
        keep = labels[0] != -1
        return labels[0][keep], dist[0][keep]

    def _hnsw_rows(self, q: np.ndarray, n: int,
                   rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """HNSW search restricted to ``rows``: a bitmap over the inner index's rows (built with
        numpy in well under a millisecond, where an id hash set of 50k ids takes ~4 ms)."""
        bits = np.zeros(self._n, dtype=bool)
        bits[rows] = True
        packed = np.packbits(bits, bitorder="little")
        sel = faiss.IDSelectorBitmap(self._n, faiss.swig_ptr(packed))
        n = min(max(n, vi.RESCORE_CANDIDATES), len(rows))  # more than n: rescored, then cut
        selectivity = len(rows) / max(self._n, 1)
        ef = int(min(vi.MAX_EF_SEARCH, max(vi.HNSW_EF_SEARCH, n) / max(selectivity, 1e-6)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, n))
        params.sel = sel
        dist, labels = faiss.downcast_index(self._index.index).search(q, n, params=params)
        del packed  # only now may the bitmap the selector points into go
        keep = labels[0] != -1
        return self._row_ids[labels[0][keep]], dist[0][keep]

    def own_vectors(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The vectors the index itself holds for the live ones of ``ids`` (8-bit ones decoded to
        float32, pending ones as given)."""
        with self.lock.read():
            keys = np.asarray(ids, dtype=np.int64).tolist()
            rows = self._lookup(np.asarray(keys, dtype=np.int64)).tolist()
            main = [(i, r) for i, r in zip(keys, rows) if r >= 0 and not self._dead[r]]
            pend = [(i, self._p_rows[i]) for i in keys if i in self._p_rows]
            vectors = np.vstack([vi.decode(self._index, np.asarray([r for _, r in main], np.int64)),
                                 self._p_vecs[[r for _, r in pend]]])
        return np.asarray([i for i, _ in main + pend], dtype=np.int64), vectors


def _near_top(ids: np.ndarray, approx: np.ndarray, err: np.ndarray, n: int) -> np.ndarray:
    """``near_top`` with an error per score: the ids whose score, raised by its error, reaches
    the n-th best of the scores lowered by theirs (the exact top n is among them)."""
    if len(ids) <= n:
        return ids
    low = approx - err
    nth = np.partition(low, len(low) - n)[len(low) - n]
    kept: np.ndarray = ids[approx + err >= nth]
    return kept


class _Read:
    """Exact vectors read from the index's source for a batch of searches: each statement reads
    only ids not read yet; ``subset`` gives a search its rows in the order one read of its own
    would have returned them (the source returns rows ordered by id)."""

    def __init__(self, fetch: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
                 ids: np.ndarray) -> None:
        self._fetch = fetch
        self._ids = np.zeros(0, np.int64)
        self._vectors: np.ndarray | None = None
        self.more(ids)

    def more(self, ids: np.ndarray) -> None:
        fresh = np.setdiff1d(np.asarray(ids, np.int64), self._ids)
        if not len(fresh):
            return
        found, vectors = self._fetch(fresh)
        ids = np.concatenate([self._ids, found])
        stacked = vectors if self._vectors is None else np.vstack([self._vectors, vectors])
        order = np.argsort(ids, kind="stable")
        self._ids, self._vectors = ids[order], stacked[order]

    def subset(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The read (ids, vectors) among ``ids``, by id."""
        if not len(self._ids) or self._vectors is None:
            return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
        wanted = np.unique(np.asarray(ids, np.int64))
        pos = np.minimum(np.searchsorted(self._ids, wanted), len(self._ids) - 1)
        rows = pos[self._ids[pos] == wanted]
        return self._ids[rows], self._vectors[rows]

"""Search for ``SqliteStore``: metadata predicates, BM25 text, the FAISS index, exact scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from velesmem import limits
from velesmem.errors import Internal, InvalidInput
from velesmem.store.predicates import Predicate
from velesmem.store.scoring import top_scored
from velesmem.store.sqlite.part import LIVE, StorePart, in_query
from velesmem.store.sqlite.predicates import compile_predicate
from velesmem.store.sqlite.vector_index import VectorIndex


class SearchPart(StorePart):
    """``SearchStore``: candidates and scores a ranking needs."""

    def confidences(self, keys: Sequence[int], now: float) -> dict[int, float]:
        if not keys:
            return {}
        sql = f"SELECT id, confidence FROM facts WHERE id IN ({{}}) AND kind IS NULL AND {LIVE}"
        return {int(i): float(c) for i, c in in_query(self.reader(), sql, list(keys), (now,))}

    def matching(self, predicate: Predicate) -> np.ndarray:
        compiled = compile_predicate(predicate)
        if compiled.ids is None:
            raise InvalidInput("matching() needs a predicate; TRUE matches every fact")
        keys = np.fromiter(chain.from_iterable(self.reader().execute(compiled.ids,
                                                                     compiled.params)),
                           dtype=np.int64)
        if len(keys) > 1 and not np.all(keys[1:] >= keys[:-1]):  # one range comes sorted
            keys.sort()
        return keys

    def text_search(self, query: str, allowed: np.ndarray | None) -> tuple[np.ndarray,
                                                                           np.ndarray]:
        return self.text.search(self.reader(), query, allowed)

    @property
    def parallel_search(self) -> bool:
        index = self.index
        return index is not None and index.live_count >= limits.PARALLEL_SEARCH_MIN_FACTS

    def vector_search(self, query: np.ndarray, n: int,
                      allowed: np.ndarray | None) -> list[tuple[int, float]]:
        return self._index().search(query, n, allowed)

    def vector_search_many(self, queries: Sequence[np.ndarray],
                           ns: Sequence[int]) -> list[list[tuple[int, float]]]:
        return self._index().search_many(queries, ns)

    def vector_candidates(self, query: np.ndarray, n: int,
                          allowed: np.ndarray | None) -> np.ndarray:
        return self._index().candidates(query, n, allowed)

    def scored(self, query: np.ndarray, keys: Sequence[int],
               now: float) -> dict[int, tuple[float, float]]:
        space = self.serving
        if not keys or space is None:
            return {}
        index = self.index
        if (index is not None and index.keeps_exact_rows
                and index.source is self.vector_source(space)):
            # the index keeps this space's exact vectors by row in a file: the facts' liveness
            # and confidence alone from SQLite, the vectors from there (a pread each, where the
            # join below seeks a second B-tree per fact)
            confidence = self.confidences(keys, now)
            ids, matrix = index.exact_vectors(np.fromiter(confidence, np.int64, len(confidence)))
            found = ids.tolist()
        else:
            # one statement: the fact's liveness and confidence, and its exact stored vector
            sql = (f"SELECT f.id, f.confidence, v.vector FROM facts f LEFT JOIN space_vectors v "
                   f"ON v.space = {int(space.id)} AND v.id = f.id "
                   f"WHERE f.id IN ({{}}) AND f.kind IS NULL AND {LIVE}")
            rows = in_query(self.reader(), sql, list(keys), (now,))
            confidence = {int(i): float(c) for i, c, _ in rows}
            with_vector = [r for r in rows if r[2] is not None]
            found = [int(r[0]) for r in with_vector]
            matrix = np.frombuffer(b"".join(r[2] for r in with_vector), dtype=np.float32
                                   ).reshape(len(with_vector), space.identity.dimension)
        # einsum: each row's product alone (a BLAS product's rounding depends on its batch)
        products = np.einsum("ij,j->i", matrix, np.asarray(query, np.float32))
        cosine = dict(zip(found, products.tolist()))
        return {i: (cosine.get(i, 0.0), c) for i, c in confidence.items()}

    def vector_top(self, query: np.ndarray, n: int, allowed: np.ndarray | None,
                   now: float) -> list[tuple[int, float, float]]:
        # the index rescores its candidates from the stored vectors alone; the facts' rows are
        # read for the n it keeps, and for every candidate only when one of those n is gone
        index = self._index()
        found = index.search(query, n, allowed)
        confidence = self.confidences([k for k, _ in found], now)
        if len(confidence) == len(found):
            return [(k, c, confidence[k]) for k, c in found]
        candidates = index.candidates(query, n, allowed)
        return top_scored(self.scored(query, candidates.tolist(), now), candidates, n)

    def _index(self) -> VectorIndex:
        if self.index is None:
            raise Internal("the vector index is not loaded yet (the store is still warming)")
        return self.index

"""faiss_growth: FAISS buffers grown in place keep their contents and stop std::vector's
copying reallocations."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from velesmem.store.sqlite import faiss_growth
from velesmem.store.sqlite.vector_index import HNSW_M, add_to

pytestmark = pytest.mark.skipif(not faiss_growth.enabled(), reason="grows in place on glibc only")


def _storage(n: int) -> tuple[faiss.IndexScalarQuantizer, np.ndarray]:
    x = np.random.default_rng(4).standard_normal((n, 64)).astype(np.float32)
    storage = faiss.IndexScalarQuantizer(64, faiss.ScalarQuantizer.QT_fp16,
                                         faiss.METRIC_INNER_PRODUCT)
    storage.add(x)
    return storage, x


def test_reserve_keeps_the_codes_and_later_adds_stay_in_place() -> None:
    storage, x = _storage(20_000)  # 2.5 MB of codes
    size = storage.codes.byte_size()
    before = storage.sa_decode(faiss.vector_to_array(storage.codes).reshape(-1, 128))
    assert faiss_growth.reserve(storage.codes, 3 * size)
    words = faiss_growth._pointers(storage.codes)
    assert words[2] - words[0] >= 3 * size and words[1] - words[0] == size
    moved_to = int(storage.codes.data())
    storage.add(np.vstack([x, x]))  # std::vector would reallocate here: 3x its old size
    assert int(storage.codes.data()) == moved_to
    after = storage.sa_decode(faiss.vector_to_array(storage.codes).reshape(-1, 128))
    assert np.array_equal(after[:20_000], before) and np.array_equal(after[20_000:40_000], before)


def test_small_buffers_are_left_to_std_vector() -> None:
    storage, _ = _storage(100)
    assert not faiss_growth.reserve(storage.codes, 10 * storage.codes.byte_size())


def test_an_hnsw_index_grown_in_steps_searches_the_same() -> None:
    x = np.random.default_rng(5).standard_normal((12_000, 64)).astype(np.float32)
    grown = faiss.IndexIDMap(faiss.IndexHNSWSQ(64, faiss.ScalarQuantizer.QT_fp16, HNSW_M,
                                               faiss.METRIC_INNER_PRODUCT))
    plain = faiss.IndexIDMap(faiss.IndexHNSWSQ(64, faiss.ScalarQuantizer.QT_fp16, HNSW_M,
                                               faiss.METRIC_INNER_PRODUCT))
    faiss.omp_set_num_threads(1)  # the same graph both times
    for start in range(0, 12_000, 500):
        ids = np.arange(start, start + 500, dtype=np.int64)
        add_to(grown, ids, x[start:start + 500])
        plain.add_with_ids(x[start:start + 500], ids)
    assert np.array_equal(grown.search(x[:50], 10)[1], plain.search(x[:50], 10)[1])

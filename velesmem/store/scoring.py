"""The best candidates by exact score, as every backend's ``vector_top`` and the ranking pick them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def top_scored(scored: Mapping[int, tuple[float, float]], candidates: Sequence[int] | np.ndarray,
               n: int) -> list[tuple[int, float, float]]:
    """(key, product, confidence) of the ``n`` candidates of highest product among those
    ``scored`` holds (the live ones), best first, ties by ascending key."""
    live = [int(i) for i in candidates if int(i) in scored]
    if not live:
        return []
    ids = np.asarray(live, dtype=np.int64)
    sims = np.asarray([scored[i][0] for i in live])
    keep = np.lexsort((ids, -sims))[:n]
    return [(int(ids[k]), float(sims[k]), float(scored[int(ids[k])][1])) for k in keep]

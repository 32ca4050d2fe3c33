"""The embedder protocol: an identity (model, dimension, semantic) plus a batched ``embed``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``model`` and ``dimension`` are recorded as the store's provenance with its first fact;
    ``semantic`` says whether similarity reflects meaning (False for the hash default), which
    decides how much the vector side weighs in hybrid recall.
    """

    model: str
    dimension: int
    semantic: bool

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dimension), each row L2-normalised
        (an all-zero row for a text with nothing to embed)."""
        ...

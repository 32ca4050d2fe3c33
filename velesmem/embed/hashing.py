"""The default ``hash`` embedder: offline, deterministic, no model.

Tokenisation (an improvement over the reference, which splits on whitespace only and is case-
and punctuation-sensitive): the text is lowercased and split into Unicode word tokens — maximal
runs of letters and digits (regex ``[^\\W_]+``); everything else, punctuation and ``_``
included, is a separator, as in the FTS5 ``unicode61`` tokenizer that BM25 uses. So
``"Parking_lot, chosen!"`` gives ``["parking", "lot", "chosen"]``.

Each token adds 1.0 to bucket ``FNV-1a-64(token UTF-8) mod 384``; the vector is L2-normalised.
Similarity therefore measures shared words, not meaning (``semantic = False``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from velesmem.ids import fnv1a64

HASH_DIMENSION = 384
HASH_MODEL = "velesmem-hash-words-v1"
_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercase Unicode word tokens of ``text``; punctuation and whitespace separate them."""
    return _WORD.findall(text.lower())


@lru_cache(maxsize=200_000)
def _bucket(token: str, dimension: int) -> int:
    return fnv1a64(token.encode("utf-8")) % dimension


class HashEmbedder:
    """Bag-of-words feature hashing into ``dimension`` buckets (default 384)."""

    semantic = False

    def __init__(self, dimension: int = HASH_DIMENSION) -> None:
        self.dimension = dimension
        self.model = HASH_MODEL if dimension == HASH_DIMENSION else f"{HASH_MODEL}-{dimension}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed each text; an empty or punctuation-only text gets an all-zero row."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            buckets = [_bucket(tok, self.dimension) for tok in tokenize(text)]
            if buckets:
                out[row] = np.bincount(buckets, minlength=self.dimension)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

"""The default ``hash`` embedder: offline, deterministic, no model.

Improvements over the reference (which splits on whitespace, is case- and punctuation-sensitive
and adds +1 per token), all measured in docs/embedders.md:

* Tokens: the text is lowercased and split into Unicode word tokens, maximal runs of letters
  and digits (regex ``[^\\W_]+``); punctuation, whitespace and ``_`` separate them, as in the
  FTS5 tokenizer BM25 uses. ``"Parking_lot, chosen!"`` gives ``parking``, ``lot``, ``chosen``.
* English stopwords (``velesmem.embed.stopwords``) are left out, unless a text has nothing else.
* Signed feature hashing: each token adds +1 or -1 (bit 63 of its FNV-1a-64 hash: 0 → +1) to
  bucket ``FNV-1a-64(token UTF-8) mod 384``, so bucket collisions between unrelated words cancel
  out on average instead of always looking alike.

The vector is L2-normalised. Similarity measures shared words, not meaning (``semantic = False``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from velesmem import limits
from velesmem.embed.stopwords import STOPWORDS
from velesmem.ids import fnv1a64

HASH_DIMENSION = 384
HASH_MODEL = "velesmem-hash-words-v1"
_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercase Unicode word tokens of ``text``; punctuation and whitespace separate them."""
    return _WORD.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """The tokens the hash embedder counts: word tokens minus stopwords (all of them when a
    text holds nothing but stopwords)."""
    tokens = tokenize(text)
    kept = [t for t in tokens if t not in STOPWORDS]
    return kept or tokens


@lru_cache(maxsize=limits.HASH_TOKEN_CACHE)
def _bucket(token: str, dimension: int) -> tuple[int, float]:
    h = fnv1a64(token.encode("utf-8"))
    return h % dimension, (-1.0 if h >> 63 else 1.0)


class HashEmbedder:
    """Bag-of-words feature hashing into ``dimension`` buckets (default 384)."""

    semantic = False
    inline = True  # ~0.1 ms for the longest fact remember takes (MAX_EMBEDDABLE_TEXT_BYTES)

    def __init__(self, dimension: int = HASH_DIMENSION) -> None:
        self.dimension = dimension
        self.model = HASH_MODEL if dimension == HASH_DIMENSION else f"{HASH_MODEL}-{dimension}"

    @property
    def ready(self) -> bool:
        """Always True: there is nothing to load."""
        return True

    def warm(self) -> None:
        """Nothing to load."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed each text; a text with no token (empty, punctuation only) gets an all-zero row
        (as does one whose signed tokens cancel exactly)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            pairs = [_bucket(tok, self.dimension) for tok in content_tokens(text)]
            if pairs:
                buckets, signs = zip(*pairs)
                out[row] = np.bincount(buckets, weights=signs, minlength=self.dimension)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

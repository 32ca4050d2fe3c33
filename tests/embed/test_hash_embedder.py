"""The default hash embedder: tokenisation, shape, normalisation, determinism, loader."""

from __future__ import annotations

import numpy as np
import pytest

from velesmem.config import Settings
from velesmem.embed import (
    HASH_DIMENSION,
    Embedder,
    HashEmbedder,
    content_tokens,
    load_embedder,
    tokenize,
)
from velesmem.errors import Internal
from velesmem.ids import fnv1a64


def test_tokenize_lowercases_and_strips_punctuation() -> None:
    assert tokenize("Parking_lot, chosen! CAFÉ 2x-fast") == ["parking", "lot", "chosen", "café",
                                                            "2x", "fast"]


def test_embed_is_l2_normalised_float32_of_384_dims() -> None:
    vecs = HashEmbedder().embed(["hello world", "Hello, WORLD!", ""])
    assert vecs.dtype == np.float32 and vecs.shape == (3, HASH_DIMENSION)
    assert np.allclose(np.linalg.norm(vecs[:2], axis=1), 1.0)
    assert np.array_equal(vecs[0], vecs[1])  # case and punctuation do not matter
    assert not vecs[2].any()  # nothing to embed: the zero vector


def test_bucket_is_fnv_of_the_token_mod_384_signed_by_bit_63() -> None:
    for word in ("hello", "tokio", "parking", "cache", "lock"):
        h = fnv1a64(word.encode())
        vec = HashEmbedder().embed([f"{word} {word}"])[0]
        assert np.flatnonzero(vec).tolist() == [h % 384]
        assert vec[h % 384] == (-1.0 if h >> 63 else 1.0)


def test_stopwords_are_left_out_unless_nothing_else_remains() -> None:
    assert content_tokens("Why did we adopt Tokio?") == ["adopt", "tokio"]
    assert content_tokens("what is it") == ["what", "is", "it"]
    emb = HashEmbedder()
    a, b = emb.embed(["why did we adopt tokio", "adopt tokio"])
    assert np.array_equal(a, b)


def test_identity_and_protocol() -> None:
    emb = HashEmbedder()
    assert isinstance(emb, Embedder)
    assert (emb.dimension, emb.semantic) == (384, False)
    assert emb.model


def test_load_embedder_default_is_hash() -> None:
    assert isinstance(load_embedder(Settings.from_env({})), HashEmbedder)


def test_unknown_embedder_is_internal_and_lists_the_known_ones() -> None:
    with pytest.raises(Internal, match="known embedders are hash"):
        load_embedder(Settings.from_env({"VELESDB_MEMORY_EMBEDDER": "nope"}))

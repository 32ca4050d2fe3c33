"""Embedders: the ``Embedder`` protocol, the offline ``hash`` default, the in-process ``local``
model, the ``ollama`` / ``openai`` remote backends, and ``load_embedder``."""

from velesmem.embed.base import Embedder, EmbedderWarming
from velesmem.embed.hashing import (
    HASH_DIMENSION,
    HASH_MODEL,
    HashEmbedder,
    content_tokens,
    tokenize,
)
from velesmem.embed.loader import BACKENDS, load_embedder, local_available
from velesmem.embed.stopwords import STOPWORDS

__all__ = ["BACKENDS", "HASH_DIMENSION", "HASH_MODEL", "STOPWORDS", "Embedder", "EmbedderWarming",
           "HashEmbedder", "content_tokens", "load_embedder", "local_available", "tokenize"]

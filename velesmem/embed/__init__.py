"""Embedders: the ``Embedder`` protocol, the offline ``hash`` default and ``load_embedder``."""

from velesmem.embed.base import Embedder
from velesmem.embed.hashing import HASH_DIMENSION, HASH_MODEL, HashEmbedder, tokenize
from velesmem.embed.loader import BACKENDS, load_embedder

__all__ = ["BACKENDS", "HASH_DIMENSION", "HASH_MODEL", "Embedder", "HashEmbedder",
           "load_embedder", "tokenize"]

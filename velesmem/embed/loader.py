"""``load_embedder(settings)``: pick the backend named by ``VELESDB_MEMORY_EMBEDDER``."""

from __future__ import annotations

from collections.abc import Callable

from velesmem.config import Settings
from velesmem.embed.base import Embedder
from velesmem.embed.hashing import HashEmbedder
from velesmem.errors import Internal

BACKENDS: dict[str, Callable[[Settings], Embedder]] = {
    "hash": lambda settings: HashEmbedder(),
}


def local_available() -> bool:
    """Is the in-process ``local`` embedder installed?"""
    return "local" in BACKENDS


def load_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings.embedder`` names (unset: hash); Internal (listing the known
    ones) otherwise."""
    name = (settings.embedder or "hash").strip().lower()
    factory = BACKENDS.get(name)
    if factory is None:
        known = ", ".join(sorted(BACKENDS))
        raise Internal(
            f"unknown embedder {settings.embedder!r} (VELESDB_MEMORY_EMBEDDER): known embedders "
            f"are {known}"
        )
    return factory(settings)

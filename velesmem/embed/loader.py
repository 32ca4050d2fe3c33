"""``load_embedder(settings)``: pick the backend named by ``VELESDB_MEMORY_EMBEDDER``.

Construction is cheap and does no I/O (no model load, no network); call ``warm()`` on the result
to load or probe it (``velesmem.embed.base`` describes the lifecycle).
"""

from __future__ import annotations

from collections.abc import Callable

from velesmem.config import Settings
from velesmem.embed.base import Embedder
from velesmem.embed.hashing import HashEmbedder
from velesmem.errors import Internal


def _local(settings: Settings) -> Embedder:
    from velesmem.embed.local import LOCAL_MODEL, LocalEmbedder

    return LocalEmbedder(model=settings.local_model or LOCAL_MODEL)


def _ollama(settings: Settings) -> Embedder:
    from velesmem.embed.remote import ollama_from_settings

    return ollama_from_settings(settings)


def _openai(settings: Settings) -> Embedder:
    from velesmem.embed.remote import openai_from_settings

    return openai_from_settings(settings)


BACKENDS: dict[str, Callable[[Settings], Embedder]] = {
    "hash": lambda settings: HashEmbedder(),
    "local": _local,
    "ollama": _ollama,
    "openai": _openai,
}


def local_available() -> bool:
    """Is the ``embed`` extra (onnxruntime, tokenizers, the model package) installed?"""
    from velesmem.embed.local import missing_modules

    return not missing_modules()


def load_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings.embedder`` names (unset: hash), not yet warmed; Internal (with the
    fix) when the name is unknown or the backend cannot work here (the ``embed`` extra missing)."""
    name = (settings.embedder or "hash").strip().lower()
    factory = BACKENDS.get(name)
    if factory is None:
        known = ", ".join(sorted(BACKENDS))
        raise Internal(
            f"unknown embedder {settings.embedder!r} (VELESDB_MEMORY_EMBEDDER): known embedders "
            f"are {known}"
        )
    return factory(settings)

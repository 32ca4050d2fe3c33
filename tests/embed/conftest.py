"""One warmed local model per test session (loading it takes about half a second)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_embedder(_model_cache):  # derives the int8 graph into the session cache
    from velesmem.embed.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.warm()
    return embedder

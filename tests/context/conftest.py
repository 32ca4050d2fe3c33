"""Fixtures for the compiler tests: a real MemoryService on a temp store, with a settable clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from context_helpers import Clock

from velesmem.config import Settings


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[object]:
    """A real MemoryService (hash embedder, SQLite + FAISS) on a fresh temp store."""
    import velesmem

    settings = Settings.from_env().with_overrides(path=tmp_path / "store")
    service = velesmem.open(settings.path, settings=settings, clock=clock).memory
    try:
        yield service
    finally:
        service.close()

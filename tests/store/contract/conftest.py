"""The storage-protocol contract suite: every backend must pass it unchanged.

``backend_store`` opens a fresh, started, warmed store of each backend listed in ``BACKENDS``
(the PostgreSQL backend adds itself there with a real server). Tests talk to the protocol only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from velesmem.config import Settings
from velesmem.ids import fact_id, to_i64
from velesmem.runtime import ThreadSpawner
from velesmem.store import FactWrite, Identity, Store, WarmProgress, open_store

DIM = 8
IDENTITY = Identity("contract-test-embedder", DIM)
NOW = 1_780_000_000.0
BACKENDS = ["sqlite", "postgres"]


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def write(text: str, *, metadata: str = "{}", seed: int | None = None, now: float = NOW,
          expires_at: float | None = None,
          links: tuple[tuple[int, str], ...] = ()) -> FactWrite:
    key = to_i64(fact_id(text))
    return FactWrite(key, text, metadata, vector(seed if seed is not None else abs(key) % 10_000),
                     now, expires_at, links)


@pytest.fixture(params=BACKENDS)
def backend_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    name = request.param
    if name == "sqlite":
        return Settings(path=tmp_path / "store", backend="sqlite")
    factory = request.getfixturevalue(f"{name}_settings")  # provided by the backend's tests
    return factory


@pytest.fixture
def open_backend(backend_settings: Settings) -> Iterator[Callable[[], Store]]:
    opened: list[Store] = []

    def opener() -> Store:
        store = open_store(backend_settings, IDENTITY, NOW)
        store.start(ThreadSpawner())
        store.warm(WarmProgress())
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def store(open_backend: Callable[[], Store]) -> Store:
    return open_backend()

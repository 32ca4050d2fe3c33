"""Fixtures for the PostgreSQL backend's own tests: stores on a fresh database of the session's
real server (tests/conftest.py), and child processes playing a second daemon."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from velesmem.config import Settings
from velesmem.ids import fact_id, to_i64
from velesmem.runtime import ThreadSpawner
from velesmem.store import FactWrite, Identity, WarmProgress, open_store
from velesmem.store.postgres.backend import PostgresStore

DIM = 8
IDENTITY = Identity("postgres-test-embedder", DIM)
NOW = 1_780_000_000.0


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def key(text: str) -> int:
    return to_i64(fact_id(text))


def write(text: str, *, metadata: str = "{}", seed: int | None = None, now: float = NOW,
          expires_at: float | None = None,
          links: tuple[tuple[int, str], ...] = ()) -> FactWrite:
    k = key(text)
    return FactWrite(k, text, metadata, vector(seed if seed is not None else abs(k) % 10_000),
                     now, expires_at, links)


@pytest.fixture
def open_pg(postgres_settings: Settings) -> Iterator[Callable[..., PostgresStore]]:
    """Open (and by default start and warm) stores on the test's database; all closed after."""
    opened: list[PostgresStore] = []

    def opener(*, start: bool = True, identity: Identity | None = IDENTITY) -> PostgresStore:
        store = open_store(postgres_settings, identity, NOW)
        assert isinstance(store, PostgresStore)
        opened.append(store)
        if start:
            store.start(ThreadSpawner())
            store.warm(WarmProgress())
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def pg(open_pg: Callable[..., PostgresStore]) -> PostgresStore:
    return open_pg()

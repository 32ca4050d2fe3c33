"""Fixtures for the memory engine tests: a fixed, steerable clock and an open service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.memory import MemoryService

START = 1_780_000_000.0  # 2026-05-28 UTC


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def settings() -> Settings:
    return Settings.from_env({})


@pytest.fixture
def mem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    service = MemoryService.open(store_dir, clock=clock, settings=settings)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def vmem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    """A service ranking by vector similarity only (recall_mode=vector)."""
    service = MemoryService.open(store_dir, clock=clock,
                                 settings=settings.with_overrides(recall_mode="vector"))
    try:
        yield service
    finally:
        service.close()

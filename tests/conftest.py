"""Shared test configuration: keep every test away from the user's real store and CA."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.memory import MemoryService


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HOME and the VELESDB_MEMORY_* paths at a temp dir so no test touches ~/."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("VELESDB_MEMORY_"):
            monkeypatch.delenv(name)


# --- the memory engine on a temp store, with a clock the test moves --------------------------
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

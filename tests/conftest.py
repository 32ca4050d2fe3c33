"""Shared test configuration: keep every test away from the user's real store and CA."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HOME and the VELESDB_MEMORY_* paths at a temp dir so no test touches ~/."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("VELESDB_MEMORY_"):
            monkeypatch.delenv(name)

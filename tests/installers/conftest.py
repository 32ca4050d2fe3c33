"""Fixtures for the installer tests: a real daemon per module that needs one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from installer_helpers import RunningDaemon, start_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """A running daemon with its own temp HOME, store and CA, stopped after the module."""
    running = start_daemon(tmp_path_factory.mktemp("daemon"))
    yield running
    running.stop()

"""The spawner: the one way a backend starts a background thread or thread pool.

Only the Runtime creates threads (``velesmem.runtime.ThreadSpawner``); it hands its spawner to
the store when it starts it, so every thread in a serving process is named and started by the
Runtime (tests/test_layers.py checks that no other module constructs one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol


class Spawner(Protocol):
    """Starts the background threads and pools a backend needs."""

    def thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        """Start a daemon thread named ``name`` running ``target``; return it (to join)."""
        ...

    def pool(self, workers: int, name: str) -> ThreadPoolExecutor:
        """A pool of at most ``workers`` threads named ``name-N`` (the caller shuts it down)."""
        ...

"""``Warmable``: the load-once machinery shared by the embedders that load something.

``warm()`` runs the subclass's ``_load()`` under a lock until it succeeds once; ``_ensure_warm()``
(called by ``embed``) returns at once when ready, waits a bounded time for a load another thread
is running, or runs the load itself when nobody is. See ``velesmem.embed.base`` for the contract.
"""

from __future__ import annotations

import threading

from velesmem import limits
from velesmem.embed.base import EmbedderWarming


class Warmable:
    """Mixin: ``ready``, ``warm()`` and ``_ensure_warm()`` around an abstract ``_load()``."""

    def __init__(self, what: str,
                 warm_wait_seconds: float = limits.EMBED_WARM_WAIT_SECONDS) -> None:
        self._what = what
        self._warm_wait_seconds = warm_wait_seconds
        self._warm_lock = threading.Lock()
        self._ready = threading.Event()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def warm(self) -> None:
        """Run ``_load()`` unless it already succeeded; its Internal propagates (and a later
        call tries again)."""
        if self._ready.is_set():
            return
        with self._warm_lock:
            self._warm_locked()

    def _warm_locked(self) -> None:
        if not self._ready.is_set():
            self._load()
            self._ready.set()

    def _ensure_warm(self) -> None:
        if self._ready.is_set():
            return
        if not self._warm_lock.acquire(timeout=self._warm_wait_seconds):
            raise EmbedderWarming(
                f"{self._what} is still loading (waited {self._warm_wait_seconds:g} s): "
                "retry in a moment; /health shows when it is ready"
            )
        try:
            self._warm_locked()
        finally:
            self._warm_lock.release()

    def _load(self) -> None:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

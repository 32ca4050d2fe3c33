"""The single-writer lock: an exclusive, non-blocking portalocker lock on the store directory.

The holder writes its pid into the lock file so a refused opener can name it. The lock lives as
long as the open file handle; the OS drops it when the holder dies (even with kill -9).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import portalocker

from velesmem.errors import StoreLocked

LOCK_FILE = "store.lock"
LOCK_FIX = ("a velesmem daemon already owns this store: connect to it, or point "
            "VELESDB_MEMORY_PATH elsewhere")


class StoreLock:
    """Holds ``<dir>/store.lock`` exclusively until ``release()``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_FILE
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock at once, or raise StoreLocked naming the directory, holder and fix."""
        fh = open(self.path, "a+", encoding="utf-8")
        try:
            portalocker.lock(fh, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            fh.close()
            raise StoreLocked(
                f"store {self.directory} is locked by another process (pid {self._holder()}): "
                f"{LOCK_FIX}"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh

    def _holder(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return "unknown"
        return text if text.isdigit() else "unknown"

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fh is not None:
            try:
                portalocker.unlock(self._fh)
            finally:
                self._fh.close()
                self._fh = None

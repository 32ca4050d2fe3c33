"""The single-writer lock: an exclusive, non-blocking lock on the store directory itself.

Locking the directory (flock on its descriptor) means deleting a file cannot release it: a second
process can never serve the same store while the first runs. The OS drops the lock when the
holder dies, even with kill -9. ``store.lock`` only records the holder's pid, so a refused opener
can name it, and an opener that finds a dead pid there says the old holder is gone. On Windows,
where a directory cannot be opened for locking, the record file itself is locked (an open,
locked file cannot be deleted there).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from velesmem.errors import StoreLocked

LOCK_FILE = "store.lock"
LOCK_FIX = ("a velesmem daemon already owns this store: connect to it, or point "
            "VELESDB_MEMORY_PATH elsewhere")
FILE_MODE = 0o600


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (ours to signal or not)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # QUERY_LIMITED_INFO
        if handle:
            ctypes.windll.kernel32.CloseHandle(handle)
            return True
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StoreLock:
    """Holds the store directory exclusively until ``release()``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_FILE
        self._fd: int | None = None
        self.stale_pid: int | None = None  # a dead holder's pid found in the record, if any

    def acquire(self) -> None:
        """Take the lock at once, or raise StoreLocked naming the directory, holder and fix."""
        fd = _lock_target(self.directory, self.path)
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            holder = self._holder()
            state = "" if holder is None else (
                f" (pid {holder})" if pid_alive(holder) else f" (pid {holder}, not running)")
            raise StoreLocked(
                f"store {self.directory} is locked by another process{state}: {LOCK_FIX}"
            ) from None
        self._fd = fd
        previous = self._holder()
        if previous is not None and previous != os.getpid() and not pid_alive(previous):
            self.stale_pid = previous
        self._write_pid()

    def _holder(self) -> int | None:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def _write_pid(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        os.chmod(self.path, FILE_MODE)

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            try:
                _unlock(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None


def held(directory: Path) -> bool:
    """Whether a process holds the store's lock, looked at without taking it and without
    writing anything (a read-only command uses this to decide whom to ask)."""
    return _held(Path(directory))


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_target(directory: Path, record: Path) -> int:
        return os.open(record, os.O_RDWR | os.O_CREAT, FILE_MODE)

    _REGION = 1 << 30  # lock a byte far past the pid text, so the pid stays writable

    def _lock(fd: int) -> None:
        os.lseek(fd, _REGION, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, _REGION, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    def _held(directory: Path) -> bool:
        try:
            fd = os.open(directory / LOCK_FILE, os.O_RDONLY)
        except OSError:
            return False
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            return True
        _unlock(fd)
        os.close(fd)
        return False

else:
    import fcntl

    def _lock_target(directory: Path, record: Path) -> int:
        return os.open(directory, os.O_RDONLY)

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _held(directory: Path) -> bool:
        try:
            fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused while a holder has LOCK_EX
        except OSError:
            return True
        finally:
            os.close(fd)  # drops our shared lock, if we got it
        return False

"""The recent warnings and errors of the process, kept in memory for the dashboard's Status page.

A logging handler on the ``velesmem`` logger holds the last ``limits.LOG_TAIL_RECORDS`` records at
WARNING or above, each message cut to ``limits.LOG_TAIL_CHARS``: bounded whatever the process
logs, and read without touching a log file (the daemon's log is stderr, wherever that goes).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

from velesmem import limits

LOGGER = "velesmem"


@dataclass(frozen=True)
class LogLine:
    """One logged warning or error: when (epoch seconds), its level name, logger and message."""

    at: float
    level: str
    logger: str
    message: str


class RecentErrors(logging.Handler):
    """A bounded tail of WARNING-and-above records (see the module docstring)."""

    def __init__(self, size: int = limits.LOG_TAIL_RECORDS,
                 chars: int = limits.LOG_TAIL_CHARS) -> None:
        super().__init__(logging.WARNING)
        self._lines: deque[LogLine] = deque(maxlen=size)
        self._chars = chars
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 — a bad format string must not break logging
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f" ({type(exc).__name__}: {exc})"
        line = LogLine(record.created, record.levelname, record.name, message[:self._chars])
        with self._guard:
            self._lines.append(line)

    def lines(self) -> list[LogLine]:
        """The kept records, newest first."""
        with self._guard:
            return list(reversed(self._lines))

    def attach(self) -> None:
        """Start keeping the ``velesmem`` logger's warnings and errors."""
        logger = logging.getLogger(LOGGER)
        if self not in logger.handlers:
            logger.addHandler(self)

    def detach(self) -> None:
        logging.getLogger(LOGGER).removeHandler(self)

"""Following the database from one daemon: whether PostgreSQL answers, and which embedding space
serves (another daemon's migration moves it).

``Liveness`` is the store's view of the server: marked down by a lost connection or a failed
probe (calls then fail at once, and ``/health`` says why), up again by a probe that connects.
``watch`` runs on a thread the Runtime starts: one connection of its own LISTENs on ``CHANNEL``
(a migration's cutover NOTIFYs it in the flip's transaction) and reads the serving space id every
``POLL_S`` as a fallback (a notification is lost with a dropped connection); the same connection
is the liveness probe, reopened every ``RETRY_S`` while the server is away.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from velesmem.store.postgres.connection import APPLICATION, TCP_OPTIONS, unreachable_message

CHANNEL = "velesmem_serving_space"
PROBE_TIMEOUT_S = 3  # a probe's connect timeout: how long an unreachable server delays a call
PROBE_EVERY_S = 0.5  # while down, a call probes at most this often (others fail at once)
POLL_S = 2.0  # the serving space id is read at least this often
WAKE_S = 0.25  # the watcher looks at its stop flag this often
RETRY_S = 1.0  # while the server is away, the watcher reconnects this often
log = logging.getLogger(__name__)


class Liveness:
    """Whether the server answered lately, and why not (thread-safe)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._error: str | None = None
        self._probed = 0.0

    @property
    def error(self) -> str | None:
        """The worded reason the server is unreachable, None while it answers."""
        return self._error

    def down(self, exc: BaseException | str) -> str:
        """Mark the server unreachable; the worded reason (logged once per outage)."""
        message = exc if isinstance(exc, str) else unreachable_message(self.url, exc)
        with self._lock:
            was, self._error = self._error, message
            self._probed = time.monotonic()
        if was is None:
            log.error("%s (calls fail at once until it answers again)", message)
        return message

    def up(self) -> bool:
        """Mark the server reachable; True if it was down."""
        with self._lock:
            was, self._error = self._error, None
        if was is not None:
            log.info("PostgreSQL answers again: serving")
        return was is not None

    def probe(self) -> bool:
        """Connect once (bounded by PROBE_TIMEOUT_S): True and up if it answers, else down. While
        down, at most one probe per PROBE_EVERY_S; the others answer False at once."""
        with self._lock:
            if self._error is not None and time.monotonic() - self._probed < PROBE_EVERY_S:
                return False
            self._probed = time.monotonic()
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=PROBE_TIMEOUT_S,
                                   application_name=APPLICATION, **TCP_OPTIONS)
        except psycopg.Error as exc:
            self.down(exc)
            return False
        conn.close()
        self.up()
        return True


def watch(liveness: Liveness, stop: threading.Event, on_serving: Callable[[int], None],
          on_up: Callable[[], None]) -> None:
    """Until ``stop``: call ``on_serving(space_id)`` for every space a NOTIFY names and every
    ``POLL_S`` with the recorded one; keep ``liveness`` current, calling ``on_up`` after an
    outage (see the module docstring)."""
    while not stop.is_set():
        try:
            conn = psycopg.connect(liveness.url, autocommit=True,
                                   connect_timeout=PROBE_TIMEOUT_S,
                                   application_name=f"{APPLICATION}-watch", **TCP_OPTIONS)
        except psycopg.Error as exc:
            liveness.down(exc)
            stop.wait(RETRY_S)
            continue
        try:
            with conn:
                conn.execute(f"LISTEN {CHANNEL}")
                if liveness.up():
                    on_up()
                _follow(conn, stop, on_serving)
        except psycopg.Error as exc:
            if not stop.is_set():
                liveness.down(exc)
                stop.wait(RETRY_S)


def _follow(conn: psycopg.Connection[Any], stop: threading.Event,
            on_serving: Callable[[int], None]) -> None:
    polled = 0.0
    while not stop.is_set():
        if time.monotonic() - polled >= POLL_S:
            row = conn.execute("SELECT value FROM meta WHERE key = 'serving_space'").fetchone()
            polled = time.monotonic()
            if row is not None:
                on_serving(int(row[0]))
        for note in conn.notifies(timeout=WAKE_S):
            if note.channel == CHANNEL and note.payload.isdigit():
                on_serving(int(note.payload))


__all__ = ["CHANNEL", "Liveness", "watch"]

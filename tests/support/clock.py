"""A clock the test moves by hand: expiry, schedules and leases without sleeping."""

from __future__ import annotations

START = 1_780_000_000.0  # 2026-05-28 UTC


class Clock:
    """A callable returning ``now`` (seconds since the epoch); ``advance`` moves it forward."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

"""Durations the tests note but never assert: a loaded machine is slow, not wrong. A test that
does something with a time budget (a hook's deadline, a second daemon refused "at once") notes
how long it took with ``record``; ``bench/bounds.py`` runs those tests with
``VELESMEM_BOUNDS_FILE`` set, compares each figure with its bound and writes
bench/results/bounds.json. Without the variable nothing is written."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

BOUNDS_ENV = "VELESMEM_BOUNDS_FILE"


def record(name: str, seconds: float, bound_s: float, floor_s: float = 0.0) -> None:
    """Note one measured duration: ``name`` should hold ``floor_s <= seconds < bound_s`` on a
    quiet machine. Appends a JSON line to ``$VELESMEM_BOUNDS_FILE`` when it is set."""
    path = os.environ.get(BOUNDS_ENV)
    if not path:
        return
    line = json.dumps({"name": name, "seconds": round(seconds, 4), "bound_s": bound_s,
                       "floor_s": floor_s, "pid": os.getpid()})
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


@contextmanager
def timed(name: str, bound_s: float, floor_s: float = 0.0) -> Iterator[None]:
    """``record`` the wall-clock time the block took (also when it raises)."""
    started = time.monotonic()
    try:
        yield
    finally:
        record(name, time.monotonic() - started, bound_s, floor_s)

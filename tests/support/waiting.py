"""Waiting on positive signals: poll a condition until it holds, with a generous deadline, and
fail naming what never happened. Never sleep a fixed time and then assert.

Deadlines are ceilings, not measurements: on a loaded machine a condition takes longer, and
``VELESMEM_TEST_DEADLINE_SCALE`` (a factor, default 1) stretches every deadline at once."""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

DEADLINE_S = 60.0
POLL_S = 0.02
SCALE_ENV = "VELESMEM_TEST_DEADLINE_SCALE"


def deadline_scale() -> float:
    """The factor every deadline is multiplied by (``VELESMEM_TEST_DEADLINE_SCALE``, ≥ 1)."""
    try:
        return max(1.0, float(os.environ.get(SCALE_ENV, "1")))
    except ValueError:
        return 1.0


def _timed_out(what: str, seconds: float, last: object) -> AssertionError:
    detail = "" if last is None or last is False else f" (last value: {last!r})"
    return AssertionError(f"timed out after {seconds:.0f} s waiting for {what}{detail}")


def wait_for(condition: Callable[[], T], deadline_s: float = DEADLINE_S, what: str = "the condition",
             poll_s: float = POLL_S) -> T:
    """Call ``condition`` until it returns something truthy and return that; after
    ``deadline_s`` (scaled) raise AssertionError naming ``what``. Exceptions propagate."""
    seconds = deadline_s * deadline_scale()
    end = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise _timed_out(what, seconds, value)
        time.sleep(poll_s)


async def wait_for_async(condition: Callable[[], Awaitable[T] | T], deadline_s: float = DEADLINE_S,
                         what: str = "the condition", poll_s: float = POLL_S) -> T:
    """``wait_for`` inside an event loop: ``condition`` may be a coroutine function; the loop keeps
    running between polls."""
    seconds = deadline_s * deadline_scale()
    end = time.monotonic() + seconds
    while True:
        value: Any = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > end:
            raise _timed_out(what, seconds, value)
        await asyncio.sleep(poll_s)

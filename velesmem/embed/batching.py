"""``Coalescer``: several threads' embed calls become one model call.

A caller that finds the model idle becomes the *leader*: it takes the queued requests (its own
first in line, then others, up to ``max_texts`` texts) and runs them as one batch while later
callers queue. When it finishes, the next waiting caller whose request is still queued leads the
next batch. One model call runs at a time, so the thread count stays bounded, and under load a
single text rides in a batch with the others instead of paying a model call of its own.

A large request is cut into chunks of at most ``max_texts`` (after sorting by length, so each
chunk pads little) so that a bulk import and a short query interleave rather than queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np


class _Request:
    __slots__ = ("done", "error", "result", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False


class Coalescer:
    """Runs ``fn(texts) -> (len(texts), d) array`` over concurrent callers' merged requests."""

    def __init__(self, fn: Callable[[list[str]], np.ndarray], max_texts: int) -> None:
        self._fn = fn
        self._max_texts = max_texts
        self._cond = threading.Condition()
        self._queue: deque[_Request] = deque()
        self._busy = False

    def run(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (any count), merged with whatever other threads submit meanwhile."""
        texts = list(texts)
        if len(texts) <= self._max_texts:
            return self._submit(texts)
        # Long requests: chunk in order of length so each chunk pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = [self._submit([texts[i] for i in order[start:start + self._max_texts]])
                 for start in range(0, len(order), self._max_texts)]
        merged = np.concatenate(parts)
        out = np.empty_like(merged)
        out[order] = merged
        return out

    def _submit(self, texts: list[str]) -> np.ndarray:
        request = _Request(texts)
        with self._cond:
            self._queue.append(request)
            while True:
                if request.done:
                    return self._outcome(request)
                if not self._busy and self._queue and self._queue[0] is request:
                    break
                self._cond.wait()
            self._busy = True
            batch = self._take()
        try:
            self._compute(batch)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        return self._outcome(request)

    def _take(self) -> list[_Request]:
        batch = [self._queue.popleft()]
        count = len(batch[0].texts)
        while self._queue and count + len(self._queue[0].texts) <= self._max_texts:
            request = self._queue.popleft()
            batch.append(request)
            count += len(request.texts)
        return batch

    def _compute(self, batch: list[_Request]) -> None:
        texts = [text for request in batch for text in request.texts]
        try:
            vectors = self._fn(texts)
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the batch
            for request in batch:
                request.error, request.done = exc, True
            return
        start = 0
        for request in batch:
            request.result = vectors[start:start + len(request.texts)]
            request.done = True
            start += len(request.texts)

    @staticmethod
    def _outcome(request: _Request) -> np.ndarray:
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

"""The coalescer merges concurrent callers into one model call, in order, errors included."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.support import wait_for
from velesmem.embed.batching import Coalescer


class Model:
    """A real function standing for the model: vector = [len(text)], first call held."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.hold = threading.Event()
        self.fail = False

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            assert self.hold.wait(30)
        if self.fail:
            raise RuntimeError("model crashed")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)


def test_callers_that_queue_behind_a_running_call_share_one_batch() -> None:
    model = Model()
    coalescer = Coalescer(model, max_texts=64)
    results: dict[int, float] = {}

    def call(i: int) -> None:
        results[i] = float(coalescer.run(["x" * i])[0, 0])

    first = threading.Thread(target=call, args=(1,))
    first.start()
    wait_for(lambda: len(model.calls) == 1, what="the first model call", poll_s=0.002)
    others = [threading.Thread(target=call, args=(i,)) for i in range(2, 9)]
    for thread in others:
        thread.start()
    wait_for(lambda: len(coalescer._queue) == 7, what="seven queued callers", poll_s=0.002)
    model.hold.set()
    for thread in [first, *others]:
        thread.join(30)
    assert results == {i: float(i) for i in range(1, 9)}
    assert len(model.calls) == 2 and sorted(model.calls[1]) == sorted("x" * i for i in range(2, 9))


def test_a_long_request_is_chunked_and_keeps_its_order() -> None:
    model = Model()
    model.hold.set()
    texts = ["x" * n for n in (5, 1, 9, 3, 7, 2, 8)]
    out = Coalescer(model, max_texts=3).run(texts)
    assert out[:, 0].tolist() == [5, 1, 9, 3, 7, 2, 8]
    assert [len(c) for c in model.calls] == [3, 3, 1]
    assert [len(t) for t in model.calls[0]] == [1, 2, 3]  # chunks are cut from the length order


def test_an_error_reaches_every_caller_of_the_batch() -> None:
    model = Model()
    model.hold.set()
    model.fail = True
    coalescer = Coalescer(model, max_texts=8)
    with pytest.raises(RuntimeError, match="model crashed"):
        coalescer.run(["a"])
    model.fail = False
    assert coalescer.run(["abc"])[0, 0] == 3.0  # the coalescer is not stuck after a failure

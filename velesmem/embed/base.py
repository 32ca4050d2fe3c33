"""The embedder protocol: an identity (model, dimension, semantic), a load step and ``embed``.

Lifecycle, the same for every backend:

* **Construct** (``load_embedder(settings)``): cheap and without I/O. It fails only when the
  backend cannot work at all (unknown name, extra not installed, a required setting missing).
* **``warm()``**: the blocking load — the ONNX model and tokenizer for ``local``, the dimension
  probe for ``ollama`` / ``openai``. The Runtime calls it in a background thread while it reports
  ``warming``; it is idempotent and thread-safe, and raises ``Internal`` with the fix when the
  backend is unusable (a later call tries again: a server may come up after the daemon).
  ``ready`` turns True once it has succeeded.
* **``embed(texts)``** before ``ready``: if a ``warm()`` is running in another thread, the call
  waits up to ``limits.EMBED_WARM_WAIT_SECONDS`` and then raises ``EmbedderWarming``; if none is
  running, the call warms synchronously itself (scripts, tests and benches need no ceremony).
* **``dimension``** is fixed for ``hash`` and ``local``; a remote embedder learns it from the
  probe, so reading it before ``warm()`` warms first (blocking) — and so does
  ``isinstance(remote, Embedder)`` on Python 3.11, whose protocol check reads every attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from velesmem.errors import Warming


class EmbedderWarming(Warming):
    """The embedder is still loading (or probing its server) after the wait bound; retry soon."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``model`` and ``dimension`` are recorded as the store's provenance with its first fact;
    ``semantic`` says whether similarity reflects meaning (False for the hash default), which
    decides how much the vector side weighs in hybrid recall. ``inline`` says whether embedding
    a fact takes microseconds (no model): the daemon then embeds a write's fact on its event
    loop rather than handing it to a worker thread and back.
    """

    model: str
    semantic: bool
    inline: bool

    @property
    def dimension(self) -> int:
        """The vectors' length (a remote embedder learns it from its server's first answer)."""
        ...

    @property
    def ready(self) -> bool:
        """True once ``warm()`` has succeeded: ``embed`` will not wait for a load."""
        ...

    def warm(self) -> None:
        """Load the model / probe the server (blocking, idempotent); Internal with the fix."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dimension), each row L2-normalised
        (an all-zero row for a text with nothing to embed)."""
        ...

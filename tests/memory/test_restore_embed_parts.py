"""An import embeds each batch in parts at once on the Runtime's workers: the rows come back in
the order of the texts, the same vectors as one call."""

from __future__ import annotations

import numpy as np

import velesmem
from velesmem.memory.restore import embed_parts


def test_embedding_in_parts_on_the_pool_gives_the_vectors_of_one_call_in_order(tmp_path) -> None:
    texts = [f"fact number {i} about the ledger" for i in range(37)]
    with velesmem.open(tmp_path, embedder="hash") as runtime:
        embedder = runtime.memory.embedder
        together = embedder.embed(texts)
        parted = embed_parts(embedder, texts, runtime.executor)
    assert parted.shape == together.shape
    assert np.array_equal(parted, together)

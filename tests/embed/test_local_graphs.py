"""The local model's two graphs: int8 MatMuls for new stores, the float graph for older ones."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from velesmem.config import Settings
from velesmem.embed.local import (LOCAL_FLOAT_MODEL, LOCAL_MODEL, MODEL_SHA256, LocalEmbedder,
                                  model_file)
from velesmem.embed.quantize import cache_dir, quantized_model
from velesmem.errors import Internal
from velesmem.runtime import Runtime

from test_local_embedder import DISTRACTORS, PARAPHRASES

TEXTS = [text for pair in PARAPHRASES for text in pair] + DISTRACTORS


@pytest.fixture(scope="module")
def float_embedder(_model_cache: Path) -> LocalEmbedder:
    embedder = LocalEmbedder(model=LOCAL_FLOAT_MODEL)
    embedder.warm()
    return embedder


def test_without_a_prepared_graph_it_is_derived_once_into_the_user_cache(
        local_embedder: LocalEmbedder, _model_cache: Path) -> None:
    derived = quantized_model(model_file(), MODEL_SHA256, [cache_dir()])
    assert derived.parent == cache_dir() == _model_cache / "velesmem" / "models"
    before = derived.stat().st_mtime_ns
    assert quantized_model(model_file(), MODEL_SHA256, [cache_dir()]) == derived
    assert derived.stat().st_mtime_ns == before  # reused, not derived again
    assert [p.name for p in derived.parent.iterdir()] == [derived.name]  # no temporary left


def test_the_int8_graph_is_derived_again_when_its_file_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    derived = quantized_model(model_file(), MODEL_SHA256, [cache_dir()])
    assert derived.is_file() and derived.parent == tmp_path / "velesmem" / "models"
    os.unlink(derived)
    assert quantized_model(model_file(), MODEL_SHA256, [cache_dir()]).is_file()


def test_int8_vectors_stay_close_to_the_float_graph(local_embedder: LocalEmbedder,
                                                     float_embedder: LocalEmbedder) -> None:
    fast, exact = local_embedder.embed(TEXTS), float_embedder.embed(TEXTS)
    cosines = (fast * exact).sum(axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, cosines


def test_an_int8_vector_does_not_depend_on_its_batch(local_embedder: LocalEmbedder) -> None:
    alone = local_embedder.embed([TEXTS[0]])[0]
    for companions in (TEXTS[1:4], TEXTS[5:], ["x " * 200]):
        assert np.array_equal(local_embedder.embed([TEXTS[0], *companions])[0], alone)


def test_each_graph_names_itself_and_an_unknown_one_is_refused() -> None:
    assert LocalEmbedder().model == LOCAL_MODEL
    assert LocalEmbedder(model=LOCAL_FLOAT_MODEL).model == LOCAL_FLOAT_MODEL
    with pytest.raises(Internal, match="no model 'local:other'"):
        LocalEmbedder(model="local:other")


@pytest.mark.parametrize("configured", [None, "local"])
def test_a_store_filled_by_the_float_graph_keeps_it(tmp_path: Path, configured: str | None) -> None:
    old = Settings(path=tmp_path / "store", embedder="local", local_model=LOCAL_FLOAT_MODEL,
                   autograph="off")
    with Runtime.open(old) as rt:
        rt.wait_ready_sync(60)
        fact = rt.memory.remember("We picked PostgreSQL because the team already knows it.")
    again = Settings(path=tmp_path / "store", embedder=configured, autograph="off")
    with Runtime.open(again) as rt:
        rt.wait_ready_sync(60)
        assert rt.memory.embedder.model == LOCAL_FLOAT_MODEL
        found = rt.memory.recall("Which datastore did the engineers choose?", k=1)
        assert [m.id for m in found.memories] == [fact.id]


def test_a_new_store_gets_the_int8_graph(tmp_path: Path) -> None:
    with Runtime.open(Settings(path=tmp_path / "store", embedder="local", autograph="off")) as rt:
        rt.wait_ready_sync(60)
        rt.memory.remember("The deploy failed because the TLS certificate had expired.")
        assert rt.memory.embedder.model == LOCAL_MODEL
        assert rt.memory.memory_status().provenance["model"] == LOCAL_MODEL


def test_deriving_the_int8_graph_logs_no_preprocessing_advice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    handlers = list(logging.getLogger().handlers)
    with caplog.at_level(logging.DEBUG):
        assert quantized_model(model_file(), MODEL_SHA256, [cache_dir()]).is_file()
        logging.getLogger().warning("another warning still reaches the root logger")
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "pre-processing" in m], messages
    assert "another warning still reaches the root logger" in messages
    assert logging.getLogger().handlers == handlers  # no handler left behind
    assert not logging.getLogger().filters

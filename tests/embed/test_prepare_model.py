"""``velesdb-memory prepare-model``: the int8 graph derived at install time, beside the
installation, so a start on a fresh HOME loads it instead of deriving it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from velesmem.cli import main
from velesmem.embed.local import MODEL_SHA256, LocalEmbedder, model_file, prepare_model
from velesmem.embed.quantize import install_dir, quantized_model, quantized_name
from velesmem.errors import Internal


def test_a_fresh_home_loads_the_graph_prepare_model_put_beside_the_installation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    assert main(["prepare-model"]) == 0
    prepared = install_dir() / quantized_name(MODEL_SHA256)
    assert capsys.readouterr().out.strip() == str(prepared)
    assert prepared.is_file() and prepared.parent == tmp_path / "venv" / "share" / "velesmem" / "models"
    assert [p.name for p in prepared.parent.iterdir()] == [prepared.name]  # no temporary left
    before = prepared.stat().st_mtime_ns

    assert main(["prepare-model"]) == 0  # again: found, not derived again
    assert prepared.stat().st_mtime_ns == before

    fresh_cache = tmp_path / "fresh-home" / ".cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(fresh_cache))
    assert quantized_model(model_file(), MODEL_SHA256) == prepared
    embedder = LocalEmbedder()
    embedder.warm()
    assert embedder.embed(["the deploy failed"]).shape == (1, 384)
    assert not fresh_cache.exists()  # nothing derived on the start


def test_prepare_model_into_a_directory_that_cannot_be_made_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(Internal, match="cannot write the local model's int8 graph"):
        prepare_model(blocker / "models")
    assert blocker.read_text() == "not a directory"


def test_prepare_model_falls_back_to_the_user_cache_when_the_installation_is_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        _model_cache: Path) -> None:
    blocker = tmp_path / "venv"
    blocker.write_text("a file where the installation's directory would be")
    monkeypatch.setattr(sys, "prefix", str(blocker))
    assert main(["prepare-model"]) == 0
    captured = capsys.readouterr()
    assert "using the user cache instead" in captured.err
    assert Path(captured.out.strip()) == _model_cache / "velesmem" / "models" / quantized_name(MODEL_SHA256)

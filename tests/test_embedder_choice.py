"""Which embedder serves a store: its own when the setting is unset; a mismatch is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import velesmem
from velesmem.config import Settings
from velesmem.embed import HASH_MODEL, HashEmbedder
from velesmem.errors import EmbedderMismatch
from velesmem.runtime import backend_of


class OtherHash(HashEmbedder):
    """A hash embedder of another dimension: another identity, recorded as such."""

    def __init__(self) -> None:
        super().__init__(dimension=128)


def test_an_existing_store_is_served_by_the_embedder_that_filled_it(tmp_path: Path) -> None:
    with velesmem.open(tmp_path, settings=Settings(path=tmp_path, embedder="hash")).memory as m:
        m.remember("filled by hash")
    with velesmem.open(tmp_path, settings=Settings(path=tmp_path)).memory as m:  # unset
        status = m.memory_status().to_dict()
        assert status["embedder"]["model"] == HASH_MODEL
        assert status["provenance"] == {"recorded": True, "model": HASH_MODEL, "dimension": 384}


def test_an_explicit_embedder_that_does_not_match_is_refused_with_the_migrate_command(
        tmp_path: Path) -> None:
    with velesmem.open(tmp_path, embedder=OtherHash()).memory as m:
        m.remember("filled by another identity")
    with pytest.raises(EmbedderMismatch) as caught:
        velesmem.open(tmp_path, settings=Settings(path=tmp_path, embedder="hash"))
    message = caught.value.message
    assert "velesdb-memory migrate --to hash" in message
    assert "unset VELESDB_MEMORY_EMBEDDER" in message


def test_provenance_names_its_backend() -> None:
    assert backend_of(HASH_MODEL) == "hash"
    assert backend_of("local:all-MiniLM-L6-v2-int8") == "local"
    assert backend_of("ollama:all-minilm") == "ollama"
    assert backend_of("openai:text-embedding-3-small") == "openai"
    assert backend_of("something-else") is None

"""The ``ollama`` and ``openai`` embedders against a real local HTTP server speaking their APIs."""

from __future__ import annotations

import logging
import socket
import threading

import numpy as np
import pytest
from embedding_server import EmbeddingServer

from tests.support import wait_for
from tests.support.bounds import timed
from velesmem.config import Settings, settings_help
from velesmem.embed import Embedder, EmbedderWarming, HashEmbedder, load_embedder
from velesmem.embed.remote import (OllamaEmbedder, OpenAIEmbedder, RemoteEmbedder,
                                   openai_embeddings_url)
from velesmem.errors import Internal

KEY = "sk-test-0123456789-never-print-me"
TEXTS = ["we chose postgres for the json support", "the deploy failed", "caroline moved to sweden"]


@pytest.fixture
def server():
    with EmbeddingServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _close_every_embedder(monkeypatch: pytest.MonkeyPatch):
    """Each remote embedder a test makes (directly or through load_embedder) holds an HTTP
    connection pool: closed after the test, so no socket is left to the garbage collector."""
    made: list[RemoteEmbedder] = []
    real_init = RemoteEmbedder.__init__

    def init(self: RemoteEmbedder, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(RemoteEmbedder, "__init__", init)
    yield
    for embedder in made:
        embedder.close()


@pytest.fixture(autouse=True)
def _logs(caplog):
    """Every test here also checks that the key never reaches a log record."""
    caplog.set_level(logging.DEBUG)
    yield
    assert KEY not in caplog.text


def expected(texts: list[str], dimension: int = 48) -> np.ndarray:
    return HashEmbedder(dimension).embed(texts)


def ollama(server: EmbeddingServer, **kwargs) -> OllamaEmbedder:
    return OllamaEmbedder(server.url, "all-minilm", backoff_seconds=0.01, **kwargs)


def openai(server: EmbeddingServer, base: str | None = None, **kwargs) -> OpenAIEmbedder:
    return OpenAIEmbedder(base or server.url, "text-embedding-3-small", KEY, backoff_seconds=0.01,
                          **kwargs)


def test_ollama_probes_the_dimension_then_embeds(server) -> None:
    embedder = load_embedder(Settings(embedder="ollama", ollama_url=server.url + "/"))
    assert isinstance(embedder, OllamaEmbedder)
    assert not embedder.ready and server.behaviour.requests == []  # constructing sends nothing
    embedder.warm()
    assert isinstance(embedder, Embedder)  # after warm: on 3.11 the check reads .dimension
    assert embedder.ready and len(server.behaviour.requests) == 1
    assert (embedder.model, embedder.dimension) == ("ollama:all-minilm", 48)
    vecs = embedder.embed(TEXTS)
    assert vecs.dtype == np.float32 and np.allclose(vecs, expected(TEXTS), atol=1e-6)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)  # the server's ×3 is normalised away
    last = server.behaviour.requests[-1]
    assert last["path"] == "/api/embed" and last["body"]["model"] == "all-minilm"
    assert last["body"]["input"] == TEXTS and last["authorization"] is None


def test_reading_the_dimension_before_warm_probes(server) -> None:
    embedder = ollama(server)
    assert embedder.dimension == 48 and embedder.ready


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/embeddings"])
def test_openai_base_url_never_doubles_v1(server, suffix: str) -> None:
    embedder = openai(server, base=server.url + suffix)
    vecs = embedder.embed(TEXTS)
    assert np.allclose(vecs, expected(TEXTS), atol=1e-6)  # 'data' came back reversed: sorted
    assert {r["path"] for r in server.behaviour.requests} == {"/v1/embeddings"}
    assert embedder.model == "openai:text-embedding-3-small"


def test_openai_sends_the_key_as_a_bearer_token_and_hides_it(server) -> None:
    server.behaviour.api_key = KEY
    settings = Settings(embedder="openai", openai_url=server.url, openai_api_key=KEY)
    embedder = load_embedder(settings)
    assert embedder.embed(TEXTS).shape == (3, 48)
    assert all(r["authorization"] == f"Bearer {KEY}" for r in server.behaviour.requests)
    assert KEY not in repr(settings) and KEY not in repr(embedder) and KEY not in settings_help()


def test_a_refused_key_is_worded_redacted_and_not_retried(server) -> None:
    server.behaviour.api_key = "sk-the-right-one"
    server.behaviour.echo_key_in_error = True
    with pytest.raises(Internal, match=r"refused the credentials \(HTTP 401\)") as err:
        openai(server).warm()
    assert KEY not in str(err.value) and "VELESDB_MEMORY_OPENAI_API_KEY" in str(err.value)
    assert len(server.behaviour.requests) == 1


def test_dropped_connections_are_retried(server) -> None:
    embedder = ollama(server)
    embedder.warm()
    server.behaviour.drop_next = 2
    before = len(server.behaviour.requests)
    assert np.allclose(embedder.embed(TEXTS), expected(TEXTS), atol=1e-6)
    assert len(server.behaviour.requests) - before == 3


def test_connections_dropped_every_time_give_up_with_the_fix(server, caplog) -> None:
    server.behaviour.drop_next = 10
    with pytest.raises(Internal, match=r"cannot reach .* after 3 tries: start Ollama") as err:
        ollama(server).warm()
    assert "VELESDB_MEMORY_OLLAMA_URL" in str(err.value)
    assert len(server.behaviour.requests) == 3
    assert "retrying (2/3)" in caplog.text


def test_5xx_is_retried_a_bounded_number_of_times(server) -> None:
    server.behaviour.fail_next = 2
    assert np.allclose(openai(server).embed(TEXTS), expected(TEXTS), atol=1e-6)
    server.behaviour.fail_next = 10
    with pytest.raises(Internal, match=r"answered HTTP 500 3 times \(.*model runner crashed"):
        openai(server).warm()


def test_a_4xx_other_than_auth_quotes_the_server(server) -> None:
    with pytest.raises(Internal, match=r"refused the request \(HTTP 404: .*no route"):
        OpenAIEmbedder(server.url + "/v2/embeddings", "m").warm()
    assert len(server.behaviour.requests) == 1


def test_vectors_of_another_dimension_than_probed_are_refused(server) -> None:
    server.behaviour.dimension_after_probe = 32
    embedder = ollama(server)
    embedder.warm()
    assert embedder.dimension == 48
    with pytest.raises(Internal, match=r"returned 32-dimensional vectors, expected 48"):
        embedder.embed(TEXTS)


def test_a_wrong_count_or_garbage_is_refused(server) -> None:
    embedder = openai(server)
    embedder.warm()
    server.behaviour.short_by_one = True
    with pytest.raises(Internal, match="returned 2 vectors for 3 texts"):
        embedder.embed(TEXTS)
    server.behaviour.short_by_one, server.behaviour.garbage = False, True
    with pytest.raises(Internal, match=r"not an embeddings response .*not json"):
        embedder.embed(TEXTS)


def test_blank_texts_are_not_sent_and_get_zero_rows(server) -> None:
    embedder = ollama(server)
    embedder.warm()
    vecs = embedder.embed(["", "real text", "  "])
    assert not vecs[0].any() and not vecs[2].any() and np.isclose(np.linalg.norm(vecs[1]), 1)
    assert server.behaviour.requests[-1]["body"]["input"] == ["real text"]


def test_an_unreachable_server_is_a_worded_error_not_a_crash() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = load_embedder(Settings(embedder="ollama", ollama_url=f"http://127.0.0.1:{port}"))
    with timed("embedder (ollama): an unreachable server is reported", 10.0), \
            pytest.raises(Internal, match=r"cannot reach http://127.0.0.1:.* start Ollama"):
        embedder.warm()
    assert not embedder.ready


def test_a_stalled_server_times_out(server) -> None:
    server.behaviour.stall = threading.Event()
    with pytest.raises(Internal, match=r"did not answer within 0.2 s"):
        ollama(server, timeout_seconds=0.2).warm()


def test_embed_waits_a_bound_for_a_probe_in_progress(server) -> None:
    server.behaviour.stall = threading.Event()
    embedder = ollama(server, warm_wait_seconds=0.05)
    warmer = threading.Thread(target=embedder.warm)
    warmer.start()
    wait_for(lambda: server.behaviour.requests, what="the probe to reach the server", poll_s=0.005)
    with pytest.raises(EmbedderWarming, match="still loading"):
        embedder.embed(TEXTS)
    server.behaviour.stall.set()
    warmer.join(10)
    assert embedder.ready and embedder.embed(TEXTS).shape == (3, 48)


def test_concurrent_callers_share_requests(server) -> None:
    embedder = ollama(server)
    embedder.warm()
    texts = [f"fact number {i}" for i in range(40)]
    results: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, embedder.embed(
        [texts[i]])[0])) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert np.allclose(np.vstack([results[i] for i in range(40)]), expected(texts), atol=1e-6)


def test_the_openai_endpoint_rule() -> None:
    assert openai_embeddings_url("https://api.example.test") == \
        "https://api.example.test/v1/embeddings"
    assert openai_embeddings_url("https://h/v1/") == "https://h/v1/embeddings"
    assert openai_embeddings_url("https://h/openai/v1") == "https://h/openai/v1/embeddings"
    assert openai_embeddings_url("https://h/v1/embeddings") == "https://h/v1/embeddings"


def test_a_missing_model_name_is_refused_at_construction() -> None:
    with pytest.raises(Internal, match="needs a model name"):
        load_embedder(Settings(embedder="openai", openai_model=""))


def test_openai_settings_come_from_the_environment(server) -> None:
    server.behaviour.api_key = KEY
    settings = Settings.from_env({"VELESDB_MEMORY_EMBEDDER": "openai",
                                  "VELESDB_MEMORY_OPENAI_URL": server.url + "/v1",
                                  "VELESDB_MEMORY_OPENAI_MODEL": "nomic-embed-text",
                                  "VELESDB_MEMORY_OPENAI_API_KEY": KEY})
    embedder = load_embedder(settings)
    assert embedder.model == "openai:nomic-embed-text" and embedder.dimension == 48
    assert server.behaviour.requests[-1]["body"]["model"] == "nomic-embed-text"
    assert KEY not in repr(settings)

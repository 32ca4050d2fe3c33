"""The ollama and openai extractors against a real local server speaking their chat APIs."""

from __future__ import annotations

import logging

import pytest
from chat_server import OLLAMA_PATH, OPENAI_PATH, ChatServer, Step, ollama, openai

from tests.support.bounds import timed
from velesmem import limits
from velesmem.errors import ExtractionFailed, Internal
from velesmem.extract import SYSTEM_PROMPT, Extraction, Fact, Relation
from velesmem.extract.remote import ChatExtractor, OllamaExtractor, OpenAIExtractor

GOOD = ("fact: Dana leads the parser rewrite | Dana, Parser Rewrite\n"
        "edge: dana | leads | parser rewrite\n"
        "attr: dana | role | \"lead\"\n")
KEY = "sk-test-8f1c2e9a77"
BACKENDS = [(OllamaExtractor, ollama, OLLAMA_PATH), (OpenAIExtractor, openai, OPENAI_PATH)]
IDS = ["ollama", "openai"]


def _make(cls: type[ChatExtractor], url: str, **kw: object) -> ChatExtractor:
    kw.setdefault("backoff", 0.01)
    return cls(url, "test-model", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_a_reply_of_directives_becomes_the_extraction(chat_server: ChatServer, cls, reply,
                                                      path) -> None:
    chat_server.script(reply(GOOD))
    with _make(cls, chat_server.url) as extractor:
        out = extractor.extract("Met Dana; she now leads the parser rewrite.")
    assert out.facts == (Fact("Dana leads the parser rewrite", ("dana", "parser rewrite")),)
    assert out.relations == (Relation("dana", "leads", "parser rewrite"),)
    assert [(a.entity, a.key, a.value) for a in out.attributes] == [("dana", "role", "lead")]
    (request,) = chat_server.requests
    assert request.path == path
    assert request.body["model"] == "test-model" and request.body["stream"] is False
    assert request.body["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Met Dana; she now leads the parser rewrite."}]


def test_ollama_asks_for_a_context_window_that_holds_prompt_slice_and_reply(
        chat_server: ChatServer) -> None:
    chat_server.script(ollama("NONE"))
    with _make(OllamaExtractor, chat_server.url) as extractor:
        assert extractor.extract("nothing much") == Extraction()
    options = chat_server.requests[0].body["options"]
    assert options == {"temperature": 0, "seed": 0, "num_ctx": limits.EXTRACTOR_NUM_CTX,
                       "num_predict": limits.EXTRACTOR_NUM_PREDICT}


@pytest.mark.parametrize(("cls", "given", "expected"), [
    (OllamaExtractor, "{base}", OLLAMA_PATH), (OllamaExtractor, "{base}/", OLLAMA_PATH),
    (OllamaExtractor, "{base}/api", OLLAMA_PATH), (OllamaExtractor, "{base}/api/chat", OLLAMA_PATH),
    (OpenAIExtractor, "{base}", OPENAI_PATH), (OpenAIExtractor, "{base}/v1", OPENAI_PATH),
    (OpenAIExtractor, "{base}/v1/", OPENAI_PATH),
    (OpenAIExtractor, "{base}/v1/chat/completions", OPENAI_PATH),
])
def test_the_endpoint_is_completed_without_a_doubled_path(chat_server: ChatServer, cls, given,
                                                          expected) -> None:
    chat_server.script((ollama if cls is OllamaExtractor else openai)("NONE"))
    with _make(cls, given.format(base=chat_server.url)) as extractor:
        extractor.extract("x")
        assert extractor.endpoint == chat_server.url + expected
    assert chat_server.paths() == [expected]


def test_a_url_that_is_not_http_is_refused_with_the_setting_name() -> None:
    with pytest.raises(Internal, match="VELESDB_MEMORY_EXTRACTOR_URL"):
        OllamaExtractor("localhost:11434", "m")


def test_a_remote_extractor_needs_a_model() -> None:
    with pytest.raises(Internal, match="VELESDB_MEMORY_EXTRACTOR_MODEL"):
        OpenAIExtractor("http://127.0.0.1:1", " ")


@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_the_api_key_goes_in_the_header_and_never_in_errors_or_logs(
        chat_server: ChatServer, caplog: pytest.LogCaptureFixture, cls, reply, path) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    chat_server.script(Step(500, echo), Step(401, echo))
    caplog.set_level(logging.DEBUG)
    with _make(cls, chat_server.url, api_key=KEY) as extractor:
        assert KEY not in repr(extractor)
        with pytest.raises(ExtractionFailed) as failed:
            extractor.extract("some passage")
    assert [r.headers.get("Authorization") for r in chat_server.requests] == [f"Bearer {KEY}"] * 2
    assert "HTTP 401" in str(failed.value) and "Incorrect API key" in str(failed.value)
    assert KEY not in str(failed.value) and "***" in str(failed.value)
    assert "retrying" in caplog.text and KEY not in caplog.text
    assert failed.value.transient is False


def test_without_a_key_no_authorization_header_is_sent(chat_server: ChatServer) -> None:
    chat_server.script(ollama("NONE"))
    with _make(OllamaExtractor, chat_server.url) as extractor:
        extractor.extract("x")
    assert "Authorization" not in chat_server.requests[0].headers


@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_5xx_answers_are_retried_with_a_doubling_pause_then_succeed(chat_server: ChatServer,
                                                                     cls, reply, path) -> None:
    chat_server.script(Step(500, {"error": "busy"}), Step(503, b"overloaded"), reply(GOOD))
    pauses: list[float] = []
    with _make(cls, chat_server.url, backoff=0.5, sleep=pauses.append) as extractor:
        out = extractor.extract("passage")
    assert len(out.facts) == 1 and len(chat_server.requests) == 3
    assert pauses == [0.5, 1.0]


def test_5xx_answers_beyond_the_attempts_fail_as_transient(chat_server: ChatServer) -> None:
    chat_server.script(*[Step(502, {"error": "bad gateway"})] * 5)
    with _make(OllamaExtractor, chat_server.url, max_attempts=3) as extractor:
        with pytest.raises(ExtractionFailed, match=r"failed 3 time.*HTTP 502.*bad gateway") as \
                failed:
            extractor.extract("passage")
    assert failed.value.transient is True
    assert len(chat_server.requests) == 3


def test_429_is_retried(chat_server: ChatServer) -> None:
    chat_server.script(Step(429, {"error": {"message": "rate limited"}}), openai("NONE"))
    with _make(OpenAIExtractor, chat_server.url) as extractor:
        assert extractor.extract("x") == Extraction()
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_a_dropped_connection_is_retried(chat_server: ChatServer, cls, reply, path) -> None:
    chat_server.script(Step(drop=True), reply(GOOD))
    with _make(cls, chat_server.url) as extractor:
        assert len(extractor.extract("passage").relations) == 1
    assert len(chat_server.requests) == 2


def test_connections_dropped_every_time_fail_as_transient(chat_server: ChatServer) -> None:
    chat_server.script(*[Step(drop=True)] * 3)
    with _make(OllamaExtractor, chat_server.url, max_attempts=3) as extractor:
        with pytest.raises(ExtractionFailed, match="failed 3 time") as failed:
            extractor.extract("passage")
    assert failed.value.transient is True


def test_an_unreachable_server_fails_as_transient_after_the_retries(closed_port_url: str) -> None:
    pauses: list[float] = []
    with _make(OllamaExtractor, closed_port_url, max_attempts=2, sleep=pauses.append) as extractor:
        with pytest.raises(ExtractionFailed, match=r"failed 2 time.*Connect") as failed:
            extractor.extract("passage")
    assert failed.value.transient is True and len(pauses) == 1


@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_a_reply_slower_than_the_timeout_fails_without_a_retry(chat_server: ChatServer, cls,
                                                               reply, path) -> None:
    chat_server.script(Step(hold=True, body=reply(GOOD).body), reply(GOOD))
    with timed(f"extractor ({cls.__name__}): a held reply fails at its 0.5 s timeout", 5.0), \
            _make(cls, chat_server.url, timeout=0.5) as extractor:
        with pytest.raises(ExtractionFailed, match=r"within 0.5 s.*EXTRACTOR_TIMEOUT") as failed:
            extractor.extract("passage")
    assert failed.value.transient is True
    assert len(chat_server.requests) == 1


def test_a_refused_request_is_not_retried_and_names_the_fix(chat_server: ChatServer) -> None:
    chat_server.script(Step(404, {"error": "model 'test-model' not found, try pulling it first"}))
    with _make(OllamaExtractor, chat_server.url) as extractor:
        with pytest.raises(ExtractionFailed, match=r"HTTP 404.*not found.*_MODEL") as failed:
            extractor.extract("passage")
    assert failed.value.transient is False and len(chat_server.requests) == 1


def test_openai_retries_once_without_temperature_when_the_model_refuses_it(
        chat_server: ChatServer) -> None:
    refusal = {"error": {"message": "Unsupported value: 'temperature' does not support 0 with "
                                    "this model. Only the default (1) value is supported."}}
    chat_server.script(Step(400, refusal), openai(GOOD), openai("NONE"))
    with _make(OpenAIExtractor, chat_server.url) as extractor:
        assert len(extractor.extract("one").facts) == 1
        extractor.extract("two")
    temps = ["temperature" in r.body for r in chat_server.requests]
    assert temps == [True, False, False]


@pytest.mark.parametrize("content", [
    "Sure! Dana leads the parser rewrite.",  # prose, no directive
    "fact: a | x\nDana also leads the lexer.\nfact: b | y",  # prose between directives
    "edge: dana | leads",  # malformed directive
    "attr: dana | age | fifteen",  # attr value that is not JSON
    "```\nfact: a\n```\n```\nfact: b\n```",  # two fenced blocks
    "```\nfact: a",  # unclosed fence
    "<think>the passage is about",  # unclosed reasoning
    "",  # nothing at all
])
@pytest.mark.parametrize(("cls", "reply", "path"), BACKENDS, ids=IDS)
def test_a_malformed_reply_fails_the_whole_extraction_with_the_reason(
        chat_server: ChatServer, cls, reply, path, content: str) -> None:
    chat_server.script(reply(content))
    with _make(cls, chat_server.url) as extractor:
        with pytest.raises(ExtractionFailed, match="not outline directives") as failed:
            extractor.extract("passage")
    assert failed.value.transient is False


@pytest.mark.parametrize(("step", "match"), [
    (ollama(GOOD, done_reason="length"), "cut off"),
    (Step(body={"done": True}), "without message.content"),
    (Step(body=b"<html>proxy error</html>"), "not JSON"),
])
def test_a_cut_or_shapeless_ollama_reply_fails(chat_server: ChatServer, step: Step,
                                               match: str) -> None:
    chat_server.script(step)
    with _make(OllamaExtractor, chat_server.url) as extractor:
        with pytest.raises(ExtractionFailed, match=match):
            extractor.extract("passage")


@pytest.mark.parametrize(("step", "match"), [
    (openai(GOOD, finish_reason="length"), "output limit"),
    (openai(GOOD, finish_reason="content_filter"), "content_filter"),
    (openai(None), "without choices"),
    (Step(body={"choices": []}), "without choices"),
])
def test_a_cut_or_shapeless_openai_reply_fails(chat_server: ChatServer, step: Step,
                                               match: str) -> None:
    chat_server.script(step)
    with _make(OpenAIExtractor, chat_server.url) as extractor:
        with pytest.raises(ExtractionFailed, match=match):
            extractor.extract("passage")


def test_a_reply_over_the_size_cap_is_refused(chat_server: ChatServer) -> None:
    chat_server.script(ollama("fact: " + "x" * limits.MAX_EXTRACTOR_REPLY_BYTES))
    with _make(OllamaExtractor, chat_server.url) as extractor:
        with pytest.raises(ExtractionFailed, match="exceeds"):
            extractor.extract("passage")


def test_a_long_passage_is_sent_in_slices_and_their_results_merged_in_order(
        chat_server: ChatServer) -> None:
    paragraphs = [f"Paragraph {n}: " + "words " * 30 for n in range(6)]
    chat_server.script(*[ollama(f"fact: fact {n} | topic {n % 2}") for n in range(6)])
    with _make(OllamaExtractor, chat_server.url, chunk_bytes=250) as extractor:
        out = extractor.extract("\n\n".join(paragraphs))
    sent = [r.body["messages"][1]["content"] for r in chat_server.requests]
    assert len(sent) == 6 and all(len(s.encode()) <= 250 for s in sent)
    assert [s.split(":")[0] for s in sent] == [f"Paragraph {n}" for n in range(6)]
    assert [f.text for f in out.facts] == [f"fact {n}" for n in range(6)]


def test_a_bad_slice_fails_the_whole_passage_naming_the_slice(chat_server: ChatServer) -> None:
    chat_server.script(ollama("fact: first"), ollama("no directives here"), ollama("fact: third"))
    with _make(OllamaExtractor, chat_server.url, chunk_bytes=100) as extractor:
        with pytest.raises(ExtractionFailed, match="slice 2 of 3"):
            extractor.extract("\n\n".join(["a" * 90, "b" * 90, "c" * 90]))
    assert len(chat_server.requests) == 2  # stopped at the bad slice


def test_a_blank_passage_asks_nothing(chat_server: ChatServer) -> None:
    with _make(OpenAIExtractor, chat_server.url) as extractor:
        assert extractor.extract(" \n\n ") == Extraction()
    assert chat_server.requests == []

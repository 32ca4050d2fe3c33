"""The ``ollama`` and ``openai`` extractors: a generative model asked for outline directives.

Both send the passage (in slices of at most EXTRACTOR_CHUNK_BYTES) with ``SYSTEM_PROMPT`` to a
chat endpoint and parse every reply strictly (``velesmem.extract.reply``); the slices' results
are merged in order. Any failure — unreachable server, timeout, HTTP error, a reply cut short
or malformed — raises ExtractionFailed with the reason and yields nothing, so a job never stores
part of a passage. Connection drops, 429 and 5xx answers are retried a bounded number of times
with a doubling pause. The API key travels only in the Authorization header and is scrubbed from
every message.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from velesmem import limits
from velesmem.errors import ExtractionFailed, Internal, InvalidInput
from velesmem.extract.model import Extraction
from velesmem.extract.outline import check_size
from velesmem.extract.prompt import SYSTEM_PROMPT, chunk_text
from velesmem.extract.reply import parse_reply

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))


class _Retry(Exception):
    """An attempt failed in a way another attempt may fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _endpoint(url: str, suffixes: tuple[str, ...], full: str) -> str:
    """``url`` completed to the chat endpoint: already complete, or ending in one of
    ``suffixes`` (e.g. ``/v1``), or a bare server URL; never a doubled ``/v1``."""
    base = url.strip().rstrip("/")
    if not base.lower().startswith(("http://", "https://")):
        raise Internal(f"VELESDB_MEMORY_EXTRACTOR_URL={url!r} must be an http:// or https:// "
                       "URL, e.g. http://localhost:11434")
    if base.endswith(full):
        return base
    for suffix in suffixes:
        if base.endswith(suffix):
            return base + full[len(suffix):]
    return base + full


class ChatExtractor:
    """The shared machinery of the two chat backends; subclasses say how to ask and to read."""

    name = ""

    def __init__(self, url: str, model: str, *, api_key: str = "",
                 timeout: float = limits.DEFAULT_EXTRACTOR_TIMEOUT_SECONDS,
                 max_attempts: int = limits.EXTRACTOR_MAX_ATTEMPTS,
                 backoff: float = limits.EXTRACTOR_RETRY_BACKOFF_SECONDS,
                 chunk_bytes: int = limits.EXTRACTOR_CHUNK_BYTES,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not model.strip():
            raise Internal(f"the {self.name} extractor needs a model: set "
                           "VELESDB_MEMORY_EXTRACTOR_MODEL to a generative model")
        self.model = model.strip()
        self.endpoint = self._endpoint(url)
        self.timeout = float(timeout)
        self._api_key = api_key.strip()
        self._max_attempts = max(1, max_attempts)
        self._backoff = backoff
        self._chunk_bytes = chunk_bytes
        self._sleep = sleep
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        connect = min(self.timeout, limits.EXTRACTOR_CONNECT_TIMEOUT_SECONDS)
        self._client = httpx.Client(headers=headers, follow_redirects=False,
                                    timeout=httpx.Timeout(self.timeout, connect=connect))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(endpoint={self.endpoint!r}, model={self.model!r})"

    # --- what a subclass provides -------------------------------------------------------
    def _endpoint(self, url: str) -> str:
        raise NotImplementedError

    def _request(self, passage: str) -> dict[str, Any]:
        raise NotImplementedError

    def _reply_text(self, payload: Any) -> str:
        """The model's text from a 2xx JSON payload; ExtractionFailed if absent or cut short."""
        raise NotImplementedError

    def _adapt(self, status: int, message: str) -> bool:
        """Change the request after a refusal it can work around; True to send it again."""
        return False

    # --- the extractor protocol ---------------------------------------------------------
    def extract(self, text: str) -> Extraction:
        """Ask the model about every slice of ``text`` and merge the directives it answers."""
        check_size(text)
        parts = []
        chunks = chunk_text(text, self._chunk_bytes)
        for index, chunk in enumerate(chunks, start=1):
            reply = self._call(chunk)
            try:
                parts.append(parse_reply(reply))
            except InvalidInput as exc:
                where = f" (slice {index} of {len(chunks)})" if len(chunks) > 1 else ""
                raise ExtractionFailed(self._scrub(
                    f"the {self.name} model {self.model!r} answered something that is not "
                    f"outline directives{where}: {exc.message}"), transient=False) from None
        return Extraction.merge(parts)

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()

    def __enter__(self) -> ChatExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one model call, with bounded retries -------------------------------------------
    def _scrub(self, message: str) -> str:
        return message.replace(self._api_key, "***") if self._api_key else message

    def _fail(self, message: str, *, transient: bool) -> ExtractionFailed:
        return ExtractionFailed(self._scrub(message), transient=transient)

    def _call(self, passage: str) -> str:
        attempt = 0
        adapted = False
        while True:
            attempt += 1
            try:
                status, body = self._post(self._request(passage))
            except _Retry as retry:
                if attempt >= self._max_attempts:
                    raise self._fail(f"the {self.name} extractor at {self.endpoint} failed "
                                     f"{attempt} time(s): {retry.reason}", transient=True) from None
                delay = self._backoff * 2 ** (attempt - 1)
                log.warning("%s", self._scrub(f"{self.name} extractor: attempt {attempt} "
                                              f"failed ({retry.reason}); retrying in {delay:g} s"))
                self._sleep(delay)
                continue
            if 200 <= status < 300:
                try:
                    payload = json.loads(body)
                except ValueError:
                    raise self._fail(f"the {self.name} extractor at {self.endpoint} answered "
                                     f"HTTP {status} with a body that is not JSON: "
                                     f"{_quote(body)}", transient=False) from None
                return self._reply_text(payload)
            message = _server_message(body)
            if not adapted and self._adapt(status, message):
                adapted = True
                attempt -= 1
                continue
            hint = {401: " (check VELESDB_MEMORY_EXTRACTOR_API_KEY)",
                    403: " (check VELESDB_MEMORY_EXTRACTOR_API_KEY)",
                    404: " (check VELESDB_MEMORY_EXTRACTOR_URL and _MODEL: is the model "
                         "pulled?)"}.get(status, "")
            raise self._fail(f"the {self.name} extractor at {self.endpoint} refused the request: "
                             f"HTTP {status}: {message}{hint}", transient=False)

    def _post(self, request: dict[str, Any]) -> tuple[int, bytes]:
        """(status, body) of one POST; _Retry for what another attempt may fix; ExtractionFailed
        for a timeout or an oversized reply."""
        deadline = time.monotonic() + self.timeout
        try:
            with self._client.stream("POST", self.endpoint, json=request) as response:
                if response.status_code in _RETRY_STATUSES:
                    raise _Retry(f"HTTP {response.status_code}: "
                                 f"{_server_message(_head(response))}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limits.MAX_EXTRACTOR_REPLY_BYTES:
                    raise self._oversized()
                data = bytearray()
                for piece in response.iter_bytes():
                    data += piece
                    if len(data) > limits.MAX_EXTRACTOR_REPLY_BYTES:
                        raise self._oversized()
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the reply kept coming past the timeout")
                return response.status_code, bytes(data)
        except httpx.ConnectTimeout:
            raise _Retry(f"no connection within {limits.EXTRACTOR_CONNECT_TIMEOUT_SECONDS} s") \
                from None
        except httpx.TimeoutException:
            raise self._fail(f"the {self.name} extractor at {self.endpoint} gave no complete "
                             f"answer within {self.timeout:g} s (raise "
                             "VELESDB_MEMORY_EXTRACTOR_TIMEOUT for a slow model)",
                             transient=True) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        except httpx.HTTPError as exc:
            raise self._fail(f"the {self.name} extractor at {self.endpoint} could not be "
                             f"asked: {type(exc).__name__}: {exc}", transient=False) from None

    def _oversized(self) -> ExtractionFailed:
        return self._fail(f"the {self.name} extractor's reply exceeds "
                          f"{limits.MAX_EXTRACTOR_REPLY_BYTES} bytes", transient=False)


def _head(response: httpx.Response) -> bytes:
    """The start of an error body (enough to quote), never the whole of a huge one."""
    data = bytearray()
    for piece in response.iter_bytes():
        data += piece
        if len(data) > limits.MAX_EXTRACTOR_ERROR_CHARS * 8:
            break
    return bytes(data)


def _quote(body: bytes | str) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    cap = limits.MAX_EXTRACTOR_ERROR_CHARS
    return repr(text if len(text) <= cap else text[:cap] + "…")


def _server_message(body: bytes) -> str:
    """The error a server explains (Ollama ``{"error": "…"}``, OpenAI ``{"error": {"message":
    "…"}}``), else the start of the body."""
    try:
        payload = json.loads(body)
    except ValueError:
        return _quote(body) if body.strip() else "(empty body)"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return _quote(error) if isinstance(error, str) else _quote(body)


class OllamaExtractor(ChatExtractor):
    """Ollama's ``/api/chat``, non-streaming, temperature 0, with a context window large enough
    for the prompt, one slice and the reply (Ollama would otherwise cut the prompt silently)."""

    name = "ollama"

    def _endpoint(self, url: str) -> str:
        return _endpoint(url, ("/api",), "/api/chat")

    def _request(self, passage: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                         {"role": "user", "content": passage}],
            "stream": False,
            "options": {"temperature": 0, "seed": 0, "num_ctx": limits.EXTRACTOR_NUM_CTX,
                        "num_predict": limits.EXTRACTOR_NUM_PREDICT},
        }

    def _reply_text(self, payload: Any) -> str:
        message = payload.get("message") if isinstance(payload, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._fail(f"the ollama extractor at {self.endpoint} answered without "
                             f"message.content: {_quote(json.dumps(payload)[:400])}",
                             transient=False)
        if payload.get("done_reason") == "length":
            raise self._fail(f"the ollama model {self.model!r} was cut off after "
                             f"{limits.EXTRACTOR_NUM_PREDICT} tokens; its reply is incomplete",
                             transient=False)
        return content


class OpenAIExtractor(ChatExtractor):
    """Any OpenAI-compatible ``/v1/chat/completions`` (OpenAI, vLLM, llama.cpp, LM Studio,
    Ollama's /v1), non-streaming, temperature 0 unless the model refuses that setting."""

    name = "openai"

    def __init__(self, url: str, model: str, **kwargs: Any) -> None:
        self._temperature: float | None = 0
        super().__init__(url, model, **kwargs)

    def _endpoint(self, url: str) -> str:
        return _endpoint(url, ("/v1",), "/v1/chat/completions")

    def _request(self, passage: str) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                         {"role": "user", "content": passage}],
            "stream": False,
        }
        if self._temperature is not None:
            request["temperature"] = self._temperature
        return request

    def _adapt(self, status: int, message: str) -> bool:
        # Some models (reasoning ones) accept only their default temperature: ask again without.
        if status == 400 and "temperature" in message and self._temperature is not None:
            self._temperature = None
            return True
        return False

    def _reply_text(self, payload: Any) -> str:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._fail(f"the openai extractor at {self.endpoint} answered without "
                             f"choices[0].message.content: {_quote(json.dumps(payload)[:400])}",
                             transient=False)
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        if reason == "length":
            raise self._fail(f"the openai model {self.model!r} hit its output limit; its reply "
                             "is incomplete", transient=False)
        if reason == "content_filter":
            raise self._fail(f"the openai model {self.model!r} withheld its reply "
                             "(content_filter)", transient=False)
        return content

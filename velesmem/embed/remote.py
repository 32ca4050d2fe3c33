"""Remote embedders: ``ollama`` (``/api/embed``) and ``openai`` (any OpenAI-compatible
``/v1/embeddings``), over httpx.

Every request has a connect and a read timeout; a dropped keep-alive connection, a refused
connection, a 429 or a 5xx is retried ``REMOTE_EMBED_ATTEMPTS`` times with doubling backoff; a
4xx is reported at once. ``warm()`` probes the dimension with one short text; afterwards a
response whose vectors have another dimension (or count) is refused, so it is never stored.
Errors are ``Internal`` with the fix and never contain the API key, which lives only in the
request header (it is redacted from anything a server echoes back).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from velesmem import limits
from velesmem.config import Settings
from velesmem.embed.batching import Coalescer
from velesmem.embed.warm import Warmable
from velesmem.errors import Internal

log = logging.getLogger(__name__)

PROBE_TEXT = "velesmem dimension probe"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_SNIPPET = 200  # characters of a server's error body quoted in an error


class RemoteEmbedder(Warmable):
    """Common HTTP machinery; subclasses give the endpoint, the payload and the parser."""

    semantic = True
    inline = False
    backend = ""

    def __init__(self, *, url: str, model_name: str, fix: str, api_key: str = "",
                 attempts: int = limits.REMOTE_EMBED_ATTEMPTS,
                 backoff_seconds: float = limits.REMOTE_EMBED_BACKOFF_SECONDS,
                 timeout_seconds: float = limits.REMOTE_EMBED_TIMEOUT_SECONDS,
                 connect_timeout_seconds: float = limits.REMOTE_EMBED_CONNECT_TIMEOUT_SECONDS,
                 warm_wait_seconds: float = limits.EMBED_WARM_WAIT_SECONDS) -> None:
        if not model_name:
            raise Internal(f"the {self.backend} embedder needs a model name: {fix}")
        super().__init__(f"the {self.backend} embedder (probing {url})", warm_wait_seconds)
        self.url = url
        self.model_name = model_name
        self.model = f"{self.backend}:{model_name}"
        self._fix = fix
        self._secret = api_key
        self._attempts = max(1, attempts)
        self._backoff = backoff_seconds
        self._timeout = timeout_seconds
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers, follow_redirects=False,
            timeout=httpx.Timeout(timeout_seconds, connect=connect_timeout_seconds))
        self._dimension: int | None = None
        self._coalescer = Coalescer(self._embed_now, limits.REMOTE_EMBED_BATCH)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r}, model={self.model!r})"

    # --- identity and lifecycle --------------------------------------------------------------
    @property
    def dimension(self) -> int:
        """The probed dimension; reading it before ``warm()`` probes first (blocking)."""
        if self._dimension is None:
            self._ensure_warm()
        assert self._dimension is not None
        return self._dimension

    def _load(self) -> None:
        vectors = self._request([PROBE_TEXT])
        if not vectors or not vectors[0]:
            raise Internal(f"{self._label()} returned an empty vector for a probe text: "
                           f"{self._fix}")
        self._dimension = len(vectors[0])

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` remotely: float32 (n, dimension), rows L2-normalised; blank texts
        get zero rows and are not sent."""
        self._ensure_warm()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._coalescer.run(texts)

    def _embed_now(self, texts: list[str]) -> np.ndarray:
        dimension = self.dimension
        out = np.zeros((len(texts), dimension), dtype=np.float32)
        rows = [i for i, text in enumerate(texts) if text.strip()]
        if not rows:
            return out
        vectors = self._request([texts[i] for i in rows])
        wrong = {len(v) for v in vectors} - {dimension}
        if wrong:
            raise Internal(
                f"{self._label()} returned {min(wrong)}-dimensional vectors, expected {dimension} "
                f"(probed when it started): the model behind {self.url} changed; restart the "
                "daemon once it serves the intended model. Nothing was stored.")
        try:
            array = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            raise Internal(f"{self._label()} returned vectors that are not lists of numbers: "
                           f"{self._fix}") from None
        if not np.isfinite(array).all():
            raise Internal(f"{self._label()} returned non-finite numbers in its vectors: "
                           f"{self._fix}")
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        np.divide(array, norms, out=array, where=norms > 0)
        out[rows] = array
        return out

    # --- HTTP --------------------------------------------------------------------------------
    def _request(self, texts: list[str]) -> list[list[float]]:
        response = self._post(self._payload(texts))
        try:
            body = response.json()
            vectors = self._parse(body)
        except (ValueError, KeyError, TypeError, IndexError):
            raise Internal(
                f"{self._label()}: {self.url} answered with something that is not an embeddings "
                f"response ({self._snippet(response)}): {self._fix}") from None
        if len(vectors) != len(texts) or not all(isinstance(v, list) for v in vectors):
            raise Internal(f"{self._label()}: {self.url} returned {len(vectors)} vectors for "
                           f"{len(texts)} texts: {self._fix}")
        return vectors

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        delay = self._backoff
        for attempt in range(1, self._attempts + 1):
            last = attempt == self._attempts
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TimeoutException:
                raise Internal(f"{self._label()}: {self.url} did not answer within "
                               f"{self._timeout:g} s: {self._fix}") from None
            except httpx.TransportError as exc:
                reason = self._redact(str(exc) or type(exc).__name__)
                if last:
                    raise Internal(f"{self._label()} cannot reach {self.url} ({reason}) after "
                                   f"{self._attempts} tries: {self._fix}") from None
                log.warning("%s: %s failed (%s); retrying (%d/%d)", self._label(), self.url,
                            type(exc).__name__, attempt + 1, self._attempts)
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in _RETRY_STATUSES:
                    raise Internal(self._refused(response))
                if last:
                    raise Internal(f"{self._label()}: {self.url} answered HTTP "
                                   f"{response.status_code} {self._attempts} times "
                                   f"({self._snippet(response)}): {self._fix}")
                log.warning("%s: %s answered HTTP %d; retrying (%d/%d)", self._label(), self.url,
                            response.status_code, attempt + 1, self._attempts)
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _refused(self, response: httpx.Response) -> str:
        code = response.status_code
        if code in (401, 403):
            return (f"{self._label()}: {self.url} refused the credentials (HTTP {code}): "
                    f"{self._fix}")
        return (f"{self._label()}: {self.url} refused the request (HTTP {code}: "
                f"{self._snippet(response)}): {self._fix}")

    def _snippet(self, response: httpx.Response) -> str:
        text = " ".join(response.text.split())
        text = self._redact(text)
        return (text[:_SNIPPET] + "…") if len(text) > _SNIPPET else (text or "empty body")

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _label(self) -> str:
        return f"the {self.backend} embedder ({self.model_name})"

    # --- backend specifics -------------------------------------------------------------------
    def _payload(self, texts: list[str]) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _parse(self, body: Any) -> list[list[float]]:  # pragma: no cover - overridden
        raise NotImplementedError


class OllamaEmbedder(RemoteEmbedder):
    """Ollama's ``POST /api/embed``: ``{"model", "input": [...]}`` → ``{"embeddings": [...]}``."""

    backend = "ollama"

    def __init__(self, base_url: str, model_name: str, **kwargs: Any) -> None:
        fix = (f"start Ollama (`ollama serve`) and pull the model (`ollama pull {model_name}`), or "
               "point VELESDB_MEMORY_OLLAMA_URL / VELESDB_MEMORY_OLLAMA_MODEL at a running one")
        super().__init__(url=base_url.rstrip("/") + "/api/embed", model_name=model_name, fix=fix,
                         **kwargs)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": texts, "truncate": True}

    def _parse(self, body: Any) -> list[list[float]]:
        return list(body["embeddings"])


def openai_embeddings_url(base_url: str) -> str:
    """``…/v1/embeddings`` for a base URL given with or without ``/v1`` (never doubled), or the
    full endpoint given as is."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return base + "/embeddings"
    return base + "/v1/embeddings"


class OpenAIEmbedder(RemoteEmbedder):
    """Any OpenAI-compatible ``POST /v1/embeddings`` (OpenAI, vLLM, llama.cpp, LM Studio…)."""

    backend = "openai"

    def __init__(self, base_url: str, model_name: str, api_key: str = "", **kwargs: Any) -> None:
        fix = ("check VELESDB_MEMORY_OPENAI_URL, VELESDB_MEMORY_OPENAI_MODEL and "
               "VELESDB_MEMORY_OPENAI_API_KEY")
        super().__init__(url=openai_embeddings_url(base_url), model_name=model_name, fix=fix,
                         api_key=api_key, **kwargs)

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": texts, "encoding_format": "float"}

    def _parse(self, body: Any) -> list[list[float]]:
        items = sorted(body["data"], key=lambda item: int(item["index"]))
        return [item["embedding"] for item in items]


def ollama_from_settings(settings: Settings) -> OllamaEmbedder:
    """The ``ollama`` backend as configured."""
    return OllamaEmbedder(settings.ollama_url, settings.ollama_model)


def openai_from_settings(settings: Settings) -> OpenAIEmbedder:
    """The ``openai`` backend as configured (the key only reaches the request header)."""
    return OpenAIEmbedder(settings.openai_url, settings.openai_model, settings.openai_api_key)

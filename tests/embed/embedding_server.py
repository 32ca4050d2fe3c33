"""A real local HTTP server that speaks Ollama's ``/api/embed`` and OpenAI's ``/v1/embeddings``.

Vectors come from the hash embedder at the configured dimension (unnormalised ×3, so the client's
normalisation is visible). Switches let a test make it drop connections, answer 5xx, change the
dimension, return garbage, stall, or refuse the API key.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from velesmem.embed import HashEmbedder


@dataclass
class Behaviour:
    dimension: int = 48
    drop_next: int = 0  # close the connection without answering, this many times
    fail_next: int = 0  # answer fail_status, this many times
    fail_status: int = 500
    dimension_after_probe: int | None = None  # switch dimension after the first request
    api_key: str | None = None  # when set, require "Authorization: Bearer <key>"
    echo_key_in_error: bool = False  # a 401 body that quotes the key sent, as some servers do
    garbage: bool = False
    short_by_one: bool = False  # return one vector fewer than texts
    reverse_openai_order: bool = True  # OpenAI 'data' items out of order (index says which)
    stall: threading.Event | None = None  # wait on it before answering
    requests: list[dict[str, Any]] = field(default_factory=list)


class EmbeddingServer:
    """``with EmbeddingServer() as srv: srv.url`` — a ThreadingHTTPServer on 127.0.0.1."""

    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so dropped connections are realistic

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.02},
                                        daemon=True)

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.behaviour.stall is not None:
            self.behaviour.stall.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        b = self.behaviour
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length", 0))) or b"{}")
        with self._lock:
            b.requests.append({"path": h.path, "body": body,
                               "authorization": h.headers.get("Authorization")})
            first = len(b.requests) == 1
            drop = b.drop_next > 0
            b.drop_next -= drop
            fail = not drop and b.fail_next > 0
            b.fail_next -= fail
        if b.stall is not None:
            b.stall.wait(30)
        if drop:
            h.close_connection = True  # return without a response: the client sees a hang-up
            return
        if fail:
            return self._send(h, b.fail_status, {"error": "model runner crashed"})
        if b.api_key is not None and h.headers.get("Authorization") != f"Bearer {b.api_key}":
            sent = h.headers.get("Authorization", "")
            detail = f"Incorrect API key provided: {sent}" if b.echo_key_in_error else "bad key"
            return self._send(h, 401, {"error": {"message": detail}})
        if b.garbage:
            return self._send(h, 200, "<html>not json</html>")
        if h.path not in ("/api/embed", "/v1/embeddings"):
            return self._send(h, 404, {"error": f"no route {h.path}"})
        texts = body["input"]
        dimension = b.dimension
        if b.dimension_after_probe is not None and not first:
            dimension = b.dimension_after_probe
        vectors = (HashEmbedder(dimension).embed(texts) * 3).tolist()
        if b.short_by_one:
            vectors = vectors[:-1]
        if h.path == "/api/embed":
            return self._send(h, 200, {"model": body["model"], "embeddings": vectors})
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if b.reverse_openai_order:
            data.reverse()
        return self._send(h, 200, {"object": "list", "data": data, "model": body["model"]})

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        raw = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

"""A real local HTTP server that speaks Ollama's /api/chat and OpenAI's /v1/chat/completions.

Each test scripts the answers (a reply, an HTTP error, a dropped connection, an answer held back
past the client's timeout) and reads back the requests the extractor really sent.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OLLAMA_PATH = "/api/chat"
OPENAI_PATH = "/v1/chat/completions"
HOLD_LIMIT_SECONDS = 30  # a held answer is released at teardown, or after this at worst


@dataclass
class Step:
    """One scripted answer: a JSON or raw body with a status, or a dropped / held connection."""

    status: int = 200
    body: Any = None  # dict/list → JSON; bytes → sent as is
    drop: bool = False
    hold: bool = False


def ollama(content: str, done_reason: str = "stop") -> Step:
    return Step(body={"model": "m", "created_at": "2026-01-01T00:00:00Z",
                      "message": {"role": "assistant", "content": content},
                      "done": True, "done_reason": done_reason})


def openai(content: str | None, finish_reason: str = "stop") -> Step:
    return Step(body={"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
                      "choices": [{"index": 0, "finish_reason": finish_reason,
                                   "message": {"role": "assistant", "content": content}}]})


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ChatServer:
    """The scripted server; ``url`` is its base (no path)."""

    url: str = ""
    steps: deque[Step] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without this, Nagle + delayed ACK add 40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _send(self, status: int, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            with server.lock:
                server.requests.append(Request(self.path, dict(self.headers.items()), body))
                step = server.steps.popleft() if server.steps else None
            if self.path not in (OLLAMA_PATH, OPENAI_PATH):
                self._send(404, {"error": "404 page not found"})
                return
            chat = isinstance(body, dict) and bool(body.get("model")) \
                and body.get("stream") is False and isinstance(body.get("messages"), list)
            if not chat:
                self._send(400, {"error": "the request is not a non-streaming chat request"})
                return
            if step is None:
                self._send(500, {"error": "no scripted answer left"})
                return
            if step.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if step.hold:
                server.release.wait(HOLD_LIMIT_SECONDS)
            self._send(step.status, step.body)

    return Handler


def serve() -> tuple[ChatServer, ThreadingHTTPServer, threading.Thread]:
    """Start a scripted server on a free loopback port."""
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    return state, httpd, thread

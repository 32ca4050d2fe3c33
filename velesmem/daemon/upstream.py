"""A small client for the daemon's ``/mcp`` on ``http.client`` + ``ssl`` only (the light attach path
must not load httpx, the MCP SDK or pydantic): keep-alive connections verified against the local
CA, replies as JSON or SSE, the session and protocol headers."""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from velesmem.daemon.address import HEALTH_PATH, MCP_PATH

SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
ACCEPT = "application/json, text/event-stream"
READ_TIMEOUT_S = 300.0  # one tool call may take this long (a remote extractor, say)
SHORT_TIMEOUT_S = 2.0  # /health probes and the closing DELETE
NETWORK_ERRORS = (OSError, http.client.HTTPException)  # ssl.SSLError is an OSError

OnMessage = Callable[[bytes], None]


class Gone(Exception):
    """The daemon refused or dropped the connection (not an HTTP answer: there was none)."""


def client_ssl_context(ca_cert: Path) -> ssl.SSLContext:
    """A strict client context trusting only our CA (hostname checked, no fallback)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_cert))
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


@dataclass(frozen=True)
class Endpoint:
    """Where the daemon is and how to talk to it (context None: plain HTTP, debugging only)."""

    host: str
    port: int
    context: ssl.SSLContext | None
    token: str = ""  # VELESDB_MEMORY_AUTH_TOKEN: sent as a bearer token, never logged

    def url(self, path: str = MCP_PATH) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.context else 'http'}://{host}:{self.port}{path}"

    def connect(self, timeout: float | None = READ_TIMEOUT_S) -> http.client.HTTPConnection:
        """A new (not yet opened) connection; http.client opens it at the first request."""
        if self.context is None:
            return http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        base = {"Accept": ACCEPT}
        if self.token:
            base["Authorization"] = f"Bearer {self.token}"
        return base | dict(extra or {})


@dataclass(frozen=True)
class Answer:
    """The HTTP side of one exchange (the JSON-RPC messages went to ``on_message``)."""

    status: int
    session_id: str | None
    body: bytes = b""  # kept for error statuses, whose body is not relayed as is


class Upstream:
    """Requests to ``/mcp`` over a pool of keep-alive connections (one per request in flight)."""

    def __init__(self, endpoint: Endpoint, seed: http.client.HTTPConnection | None = None) -> None:
        self.endpoint = endpoint
        self._idle: list[http.client.HTTPConnection] = [seed] if seed is not None else []
        self._lock = threading.Lock()

    def post(self, body: bytes, headers: Mapping[str, str], on_message: OnMessage) -> Answer:
        """POST one JSON-RPC message (or batch); each reply message goes to ``on_message`` as it
        arrives. Raises Gone when no HTTP answer came back."""
        extra = {"Content-Type": "application/json", **headers}
        return self._exchange("POST", body, extra, on_message)

    def healthy(self) -> bool:
        """Whether the daemon answers 200 on ``/health`` (on a fresh connection)."""
        conn = self.endpoint.connect(SHORT_TIMEOUT_S)
        try:
            conn.request("GET", HEALTH_PATH, headers=self.endpoint.headers({"Accept": "application/json"}))
            response = conn.getresponse()
            response.read()
            return response.status == 200
        except NETWORK_ERRORS:
            return False
        finally:
            conn.close()

    def delete(self, headers: Mapping[str, str]) -> None:
        """End a session (best effort: the client is leaving anyway)."""
        conn = self.endpoint.connect(SHORT_TIMEOUT_S)
        try:
            conn.request("DELETE", MCP_PATH, headers=self.endpoint.headers(headers))
            conn.getresponse().read()
        except NETWORK_ERRORS:
            pass
        finally:
            conn.close()

    def listen(self, headers: Mapping[str, str], on_message: OnMessage) -> Answer:
        """Hold the session's GET stream open and relay what the daemon sends on it until it ends."""
        conn = self.endpoint.connect(None)
        try:
            conn.request("GET", MCP_PATH, headers=self.endpoint.headers(
                {"Accept": "text/event-stream", **headers}))
            response = conn.getresponse()
            return _consume(response, on_message)
        except NETWORK_ERRORS as exc:
            raise Gone(str(exc) or type(exc).__name__) from None
        finally:
            conn.close()

    def retarget(self, endpoint: Endpoint, seed: http.client.HTTPConnection | None = None) -> None:
        """Talk to ``endpoint`` from now on (the daemon came back elsewhere, or with a new CA)."""
        with self._lock:
            idle, self._idle = self._idle, [seed] if seed is not None else []
            self.endpoint = endpoint
        for conn in idle:
            conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _exchange(self, method: str, body: bytes, headers: Mapping[str, str],
                  on_message: OnMessage) -> Answer:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        reused = conn is not None
        while True:
            conn = conn or self.endpoint.connect()
            started = False
            try:
                conn.request(method, MCP_PATH, body=body, headers=self.endpoint.headers(headers))
                response = conn.getresponse()
                started = True
                answer = _consume(response, on_message)
            except NETWORK_ERRORS as exc:
                conn.close()
                if reused and not started:
                    # a kept-alive connection the daemon had closed meanwhile: one fresh try
                    conn, reused = None, False
                    continue
                raise Gone(str(exc) or type(exc).__name__) from None
            if response.will_close:
                conn.close()
            else:
                with self._lock:
                    self._idle.append(conn)
            return answer


def _consume(response: http.client.HTTPResponse, on_message: OnMessage) -> Answer:
    """Read a whole reply: JSON-RPC messages of a 2xx go to ``on_message`` (SSE events one by one,
    as they arrive); an error status keeps its body for the caller."""
    session = response.getheader(SESSION_HEADER)
    kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
    if response.status >= 300:
        return Answer(response.status, session, response.read())
    if kind == "text/event-stream":
        data: list[bytes] = []
        while True:
            line = response.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line:  # an event ends at a blank line
                if data:
                    on_message(b"\n".join(data))
                data = []
            elif line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
        if data:
            on_message(b"\n".join(data))
    else:
        body = response.read()
        if body.strip():
            on_message(body.strip())
    return Answer(response.status, session)

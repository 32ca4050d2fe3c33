"""A few MCP tool calls to the running daemon within a hard deadline, standard library only.

The session hooks run on every session start, compaction and agent stop, so they must be quick
and must never hang: importing fastmcp alone takes over a second here, so this speaks the
streamable-HTTP transport directly — ``initialize``, ``notifications/initialized``, then
``tools/call`` requests, each a POST answered with JSON or a short SSE stream, and a DELETE that
frees the session slot — over one HTTPS connection verified against the daemon's local CA.
Every socket operation times out at the deadline; any failure raises ``McpCallFailed``.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
from typing import Any

from velesmem import __version__
from velesmem.daemon.address import MCP_PATH, DaemonAddress

PROTOCOL_VERSION = "2025-11-25"  # the newest revision negotiated through ``initialize``
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
CLIENT_NAME = "velesdb-memory-hook"
MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # a hook reads working contexts, never megabytes


class McpCallFailed(Exception):
    """The daemon could not be reached, or did not answer a call as MCP expects, in time."""


class McpSession:
    """One MCP session with the daemon; ``close()`` ends it (also on ``with`` exit)."""

    def __init__(self, address: DaemonAddress, context: ssl.SSLContext | None, deadline: float,
                 token: str = "") -> None:
        self._address = address
        self._token = token  # VELESDB_MEMORY_AUTH_TOKEN, for a daemon that requires one
        self._deadline = deadline
        self._session: str | None = None
        self._version = PROTOCOL_VERSION
        self._next_id = 0
        host = address.connect_host
        if address.scheme == "https":
            if context is None:
                raise McpCallFailed("no CA to verify the daemon with")
            self._conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, address.port, timeout=self._remaining(), context=context)
        else:
            self._conn = http.client.HTTPConnection(host, address.port, timeout=self._remaining())
        self._host_header = f"[{host}]:{address.port}" if ":" in host else f"{host}:{address.port}"

    def __enter__(self) -> McpSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _remaining(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise McpCallFailed("the deadline passed")
        return left

    def open(self) -> None:
        """The initialize handshake; the daemon's session id is kept for the calls."""
        result = self._request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": __version__}})
        version = result.get("protocolVersion")
        if isinstance(version, str):
            self._version = version
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool's structured result; McpCallFailed on a JSON-RPC or tool error."""
        result = self._request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise McpCallFailed(f"{tool} failed: {_text_of(result)}")
        structured = result.get("structuredContent")
        if isinstance(structured, dict):
            return structured
        try:
            parsed = json.loads(_text_of(result))
        except ValueError:
            raise McpCallFailed(f"{tool} returned no structured result") from None
        if not isinstance(parsed, dict):
            raise McpCallFailed(f"{tool} returned no object")
        return parsed

    def close(self) -> None:
        """End the session (frees its slot at once), then the connection; never raises."""
        try:
            if self._session is not None and self._deadline > time.monotonic():
                self._send("DELETE", None)
        except (McpCallFailed, OSError, http.client.HTTPException):
            pass
        finally:
            self._conn.close()

    # --- the transport ---------------------------------------------------------------------
    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        body = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        for message in body:
            if message.get("id") != rid:
                continue  # a notification or a request from the server: not our answer
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                raise McpCallFailed(f"{method}: {error.get('message', 'error')}")
            result = message.get("result")
            if not isinstance(result, dict):
                raise McpCallFailed(f"{method}: the answer has no result object")
            return result
        raise McpCallFailed(f"{method}: no answer in the response")

    def _post(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return self._send("POST", json.dumps(message).encode("utf-8"))

    def _send(self, verb: str, payload: bytes | None) -> list[dict[str, Any]]:
        headers = {"Host": self._host_header, "Accept": "application/json, text/event-stream"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if self._session is not None:
            headers[SESSION_HEADER] = self._session
            headers[VERSION_HEADER] = self._version
        try:
            self._conn.timeout = self._remaining()
            if self._conn.sock is not None:
                self._conn.sock.settimeout(self._conn.timeout)
            self._conn.request(verb, MCP_PATH, body=payload, headers=headers)
            response = self._conn.getresponse()
            raw = response.read(MAX_RESPONSE_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise McpCallFailed(f"{verb} {self._address.url()}: {type(exc).__name__}: {exc}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise McpCallFailed("the response is too large")
        if response.status >= 300:
            raise McpCallFailed(f"{verb} answered HTTP {response.status}")
        session = response.getheader(SESSION_HEADER)
        if session:
            self._session = session
        if not raw.strip():
            return []
        kind = (response.getheader("content-type") or "").split(";")[0].strip().lower()
        text = raw.decode("utf-8", "replace")
        return _sse_messages(text) if kind == "text/event-stream" else _json_messages(text)


def _json_messages(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        raise McpCallFailed("the response is not JSON") from None
    items = data if isinstance(data, list) else [data]
    return [m for m in items if isinstance(m, dict)]


def _sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an event stream: each event's ``data:`` lines joined."""
    messages: list[dict[str, Any]] = []
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                messages.extend(_json_messages("\n".join(data)))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return messages


def _text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return ""

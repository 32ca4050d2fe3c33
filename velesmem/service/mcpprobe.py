"""A minimal MCP client over plain HTTPS (httpx): initialize, one tools/call, close the session.

Used by ``doctor`` to ask the running daemon ``memory_status`` without importing the MCP SDK
(only ``velesmem.mcp`` and ``velesmem.daemon`` may), and to see the daemon the way a client does.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import httpx

from velesmem import __version__

PROTOCOL_VERSION = "2025-06-18"
TIMEOUT_S = 10.0


class McpProbeError(Exception):
    """The daemon did not answer the MCP exchange as expected."""


def _message(response: httpx.Response, want_id: int) -> dict[str, Any]:
    if response.status_code >= 400:
        raise McpProbeError(f"HTTP {response.status_code}: {response.text[:200]}")
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                data = json.loads(line[5:].strip() or "null")
                if isinstance(data, dict) and data.get("id") == want_id:
                    return data
        raise McpProbeError(f"no answer to request {want_id} in the event stream")
    reply: dict[str, Any] = response.json()
    return reply


def call_tool(url: str, ca_cert: str, tool: str, arguments: dict[str, Any] | None = None,
              token: str = "") -> dict[str, Any]:
    """The structured result of one tool call, over a fresh session verified against ``ca_cert``
    (sending ``token`` as a bearer token when given)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    context = ssl.create_default_context(cafile=ca_cert)
    with httpx.Client(verify=context, timeout=TIMEOUT_S) as client:
        init = client.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "velesdb-memory-doctor", "version": __version__}}})
        answer = _message(init, 1)
        if "result" not in answer:
            raise McpProbeError(f"initialize failed: {answer.get('error')}")
        if init.headers.get("mcp-session-id"):
            headers["mcp-session-id"] = init.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = answer["result"].get("protocolVersion", PROTOCOL_VERSION)
        client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        reply = _message(client.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments or {}}}), 2)
        if "mcp-session-id" in headers:
            client.delete(url, headers=headers)
    if "error" in reply:
        raise McpProbeError(f"{tool}: {reply['error'].get('message')}")
    result = reply.get("result", {})
    if result.get("isError"):
        raise McpProbeError(f"{tool}: {result.get('content')}")
    if isinstance(result.get("structuredContent"), dict):
        structured: dict[str, Any] = result["structuredContent"]
        return structured
    for block in result.get("content", []):
        if block.get("type") == "text":
            parsed: dict[str, Any] = json.loads(block["text"])
            return parsed
    raise McpProbeError(f"{tool} returned no content")

"""The daemon's ASGI app in process, under ``httpx.ASGITransport``: every guard (Host/Origin, bearer
auth, drain, session cap, body gate, duplicate request ids) and the MCP endpoint itself, with a
real Runtime (SQLite + FAISS, the hash embedder) and the real FastMCP server, but no subprocess,
port or TLS (those stay in the end-to-end tests beside this file)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from velesmem.config import Settings
from velesmem.daemon.address import DaemonAddress
from velesmem.daemon.app import McpHandle, build_app
from velesmem.daemon.auth import AuthPolicy
from velesmem.daemon.tokens import new_token, token_digest
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from velesmem.runtime import Runtime

pytestmark = pytest.mark.anyio

PORT = 8765  # never bound: it only names the authority the Host/Origin guard admits
BASE = f"https://127.0.0.1:{PORT}"
URL = f"{BASE}/mcp"
ACCEPT = {"Accept": "application/json, text/event-stream"}
VERSION = "2025-06-18"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {},
                   "clientInfo": {"name": "velesmem-in-process", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LOOPBACK = AuthPolicy("auto", checks=True, required=False)
TOKEN_REQUIRED = AuthPolicy("token", checks=True, required=True)


@dataclass
class Served:
    """The app under test, a client speaking to it in process, and its handles."""

    http: httpx.AsyncClient
    handle: McpHandle
    runtime: Runtime
    app: Starlette

    async def open_session(self, headers: dict[str, str] | None = None) -> str:
        """Initialize a 2025-era session (and send ``initialized``); its id."""
        r = await self.http.post(URL, json=INIT, headers=ACCEPT | (headers or {}))
        assert r.status_code == 200, (r.status_code, r.text)
        session_id = r.headers["mcp-session-id"]
        done = await self.http.post(URL, json=INITIALIZED, headers=session(session_id) | (headers or {}))
        assert done.status_code == 202, (done.status_code, done.text)
        return session_id

    async def call(self, session_id: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(URL, json=body, headers=session(session_id))


def session(session_id: str) -> dict[str, str]:
    return ACCEPT | {"mcp-session-id": session_id, "mcp-protocol-version": VERSION}


def tool_call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


@asynccontextmanager
async def serve(root: Path, *, auth: AuthPolicy = LOOPBACK, admit_s: float = 0.2,
                **settings: Any) -> AsyncIterator[Served]:
    """The daemon's app with its lifespan running (the Runtime started), and a client on it."""
    config = Settings(path=root / "store", tls_dir=root / "tls", embedder="hash", autograph="off", **settings)
    runtime = Runtime.open(config, start=False)
    try:
        app, handle = build_app(build_server(AppContext(runtime)), runtime, DaemonAddress("127.0.0.1", PORT, "https"),
                                idle_timeout_s=600.0, auth=auth, session_admit_s=admit_s)
        async with lifespan(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE,
                                                    timeout=30) as http:
            yield Served(http, handle, runtime, app)
    finally:
        runtime.close()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    async with app.router.lifespan_context(app):
        yield


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve(tmp_path) as s:
        yield s


# --- the MCP endpoint --------------------------------------------------------------------------

async def test_health_answers_with_the_store_and_port_without_a_handshake(served: Served) -> None:
    r = await served.http.get(f"{BASE}/health")
    assert r.status_code == 200, r.text
    assert r.json()["port"] == PORT and r.json()["status"] == "ok"
    assert r.headers["x-velesdb-memory-store"] == served.runtime.store.location


async def test_a_session_lists_the_tools_and_remembers_then_recalls_a_fact(served: Served) -> None:
    session_id = await served.open_session()
    listed = (await served.call(session_id, TOOLS_LIST)).json()
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert {"remember", "recall"} <= names
    stored = (await served.call(session_id, tool_call(3, "remember", {"fact": "the heron nests by the mill"}))).json()
    assert stored["result"]["isError"] is False, stored
    fact_id = stored["result"]["structuredContent"]["id_str"]
    found = (await served.call(session_id, tool_call(4, "recall", {"query": "heron nests", "k": 3}))).json()
    hits = found["result"]["structuredContent"]["memories"]
    assert fact_id in [hit["id_str"] for hit in hits], found


async def test_bad_tool_arguments_get_a_jsonrpc_invalid_params_error(served: Served) -> None:
    session_id = await served.open_session()
    answer = (await served.call(session_id, tool_call(5, "remember", {"fact": 42, "ttl": "soon"}))).json()
    assert answer["error"]["code"] == -32602, answer


async def test_a_deleted_session_answers_404_and_leaves_the_ledger(served: Served) -> None:
    session_id = await served.open_session()
    assert session_id in served.handle.live_sessions()
    gone = await served.http.delete(URL, headers=session(session_id))
    assert gone.status_code == 200, gone.text
    assert session_id not in served.handle.live_sessions()
    assert (await served.call(session_id, TOOLS_LIST)).status_code == 404


# --- Host / Origin -----------------------------------------------------------------------------

async def test_a_foreign_host_is_misdirected(served: Served) -> None:
    r = await served.http.post(URL, json=INIT, headers=ACCEPT | {"Host": "evil.example:8765"})
    assert r.status_code == 421, r.text
    assert served.handle.session_count() == 0


async def test_a_foreign_origin_is_forbidden_and_a_local_one_admitted(served: Served) -> None:
    refused = await served.http.post(URL, json=INIT, headers=ACCEPT | {"Origin": "https://evil.example"})
    assert refused.status_code == 403, refused.text
    admitted = await served.http.post(URL, json=INIT, headers=ACCEPT | {"Origin": BASE})
    assert admitted.status_code == 200, admitted.text


# --- bearer auth -------------------------------------------------------------------------------

async def test_token_mode_refuses_missing_and_wrong_tokens_and_serves_a_live_one(tmp_path: Path) -> None:
    async with serve(tmp_path, auth=TOKEN_REQUIRED) as s:
        token = new_token()
        s.runtime.store.put_token("laptop", token_digest(token), time.time())
        missing = await s.http.post(URL, json=INIT, headers=ACCEPT)
        assert missing.status_code == 401 and 'error="invalid_token"' not in missing.headers["www-authenticate"]
        wrong = await s.http.post(URL, json=INIT, headers=ACCEPT | {"Authorization": f"Bearer {new_token()}"})
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert "mcp-session-id" not in wrong.headers and s.handle.session_count() == 0
        bearer = {"Authorization": f"Bearer {token}"}
        session_id = await s.open_session(bearer)
        listed = await s.http.post(URL, json=TOOLS_LIST, headers=session(session_id) | bearer)
        assert listed.status_code == 200 and "remember" in listed.text
        # /health needs no token (probes and the stdio relay read it).
        assert (await s.http.get(f"{BASE}/health")).status_code == 200


async def test_a_session_is_ended_by_the_daemon_with_the_credential_that_opened_it(tmp_path: Path) -> None:
    async with serve(tmp_path, auth=TOKEN_REQUIRED) as s:
        token = new_token()
        s.runtime.store.put_token("laptop", token_digest(token), time.time())
        bearer = {"Authorization": f"Bearer {token}"}
        session_id = await s.open_session(bearer)
        await s.handle.evict(session_id)
        r = await s.http.post(URL, json=TOOLS_LIST, headers=session(session_id) | bearer)
        assert r.status_code == 404, r.text


# --- drain -------------------------------------------------------------------------------------

async def test_a_draining_daemon_refuses_new_calls_in_words_and_health_says_so(served: Served) -> None:
    session_id = await served.open_session()
    served.handle.drain.closing = True
    served.runtime.drain()
    refused = await served.call(session_id, TOOLS_LIST)
    assert refused.status_code == 503 and "shutting down" in refused.json()["error"]["message"]
    assert (await served.http.get(f"{BASE}/health")).status_code == 503


async def test_shutdown_ends_idle_sessions_at_once(served: Served) -> None:
    first, second = await served.open_session(), await served.open_session()
    assert await served.handle.end_idle_sessions() == 2
    assert [(await served.call(s, TOOLS_LIST)).status_code for s in (first, second)] == [404, 404]
    assert served.handle.session_count() == 0


# --- session cap -------------------------------------------------------------------------------

async def test_at_the_cap_the_least_recently_active_session_is_closed(tmp_path: Path) -> None:
    async with serve(tmp_path, http_max_sessions=3) as s:
        first, second, third = [await s.open_session() for _ in range(3)]
        assert (await s.call(first, TOOLS_LIST)).status_code == 200  # first is now the most recent

        fourth = await s.open_session()

        assert (await s.call(second, TOOLS_LIST)).status_code == 404
        assert [(await s.call(x, TOOLS_LIST)).status_code for x in (first, third, fourth)] == [200, 200, 200]
        assert s.handle.session_count() == 3


class HalfSentCall:
    """A tools/call whose body is half sent, so it stays in flight until ``finish()``: driven into
    the ASGI app directly (the HTTP client would send the whole body at once)."""

    def __init__(self, served: Served, session_id: str, body: dict[str, Any]) -> None:
        self.body = json.dumps(body).encode()
        self.rest = asyncio.Event()
        self.status: list[int] = []
        self.answer = bytearray()
        self.reads = 0
        headers = [(k.lower().encode(), v.encode()) for k, v in (session(session_id) | {
            "Host": f"127.0.0.1:{PORT}", "Content-Type": "application/json",
            "Content-Length": str(len(self.body))}).items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "https", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", PORT)}
        self.task = asyncio.create_task(served.app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        self.reads += 1
        half = len(self.body) // 2
        if self.reads == 1:
            return {"type": "http.request", "body": self.body[:half], "more_body": True}
        if self.reads == 2:
            await self.rest.wait()
            return {"type": "http.request", "body": self.body[half:], "more_body": False}
        await asyncio.Event().wait()  # the client stays connected: nothing more to read
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status.append(message["status"])
        elif message["type"] == "http.response.body":
            self.answer += message.get("body", b"")

    async def finish(self) -> dict[str, Any]:
        """Send the rest of the body; the call's JSON answer."""
        self.rest.set()
        await asyncio.wait_for(self.task, 30)
        assert self.status == [200], (self.status, bytes(self.answer[:300]))
        return json.loads(self.answer)


async def in_flight(served: Served, session_id: str, body: dict[str, Any]) -> HalfSentCall:
    """Start a half-sent call on the session and wait until the session cap counts it."""
    call = HalfSentCall(served, session_id, body)
    await wait_until(lambda: served.handle.activity.busy(session_id), "the call to be in flight")
    return call


async def wait_until(condition: Callable[[], bool], what: str, deadline_s: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not condition():
        assert loop.time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def test_a_session_with_a_call_in_flight_is_never_closed_to_make_room(tmp_path: Path) -> None:
    """The least recently active session has a call in flight (half its body sent): the other
    session is closed for the newcomer instead, and the call then completes."""
    async with serve(tmp_path, http_max_sessions=2) as s:
        busy, quiet = await s.open_session(), await s.open_session()
        assert (await s.call(quiet, TOOLS_LIST)).status_code == 200  # quiet is the more recently active
        call = await in_flight(s, busy, tool_call(9, "remember", {"fact": "answered across an eviction"}))
        newcomer = await s.open_session()
        answer = await call.finish()
        assert "id_str" in answer["result"]["structuredContent"], answer
        assert (await s.call(quiet, TOOLS_LIST)).status_code == 404
        assert [(await s.call(x, TOOLS_LIST)).status_code for x in (busy, newcomer)] == [200, 200]


async def test_an_initialize_at_a_cap_of_busy_sessions_is_refused_in_words(tmp_path: Path) -> None:
    """The only session keeps a call in flight for the whole admission wait: the initialize gets
    a worded 503 naming the setting, and the refusal changes nothing."""
    async with serve(tmp_path, http_max_sessions=1, admit_s=0.2) as s:
        busy = await s.open_session()
        call = await in_flight(s, busy, tool_call(12, "remember", {"fact": "answered after a refused initialize"}))
        refused = await s.http.post(URL, json=INIT, headers=ACCEPT)
        answer = await call.finish()
        assert refused.status_code == 503, refused.text
        message = refused.json()["error"]["message"]
        assert "too many open MCP sessions" in message and "VELESDB_MEMORY_HTTP_MAX_SESSIONS" in message
        assert "id_str" in answer["result"]["structuredContent"], answer
        assert (await s.call(busy, TOOLS_LIST)).status_code == 200  # never closed to make room


async def test_an_initialize_at_a_cap_of_busy_sessions_is_admitted_once_a_call_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The only session has a call in flight: a new initialize waits for room instead of being
    refused, and gets in (closing that session) as soon as the call is answered."""
    async with serve(tmp_path, http_max_sessions=1, admit_s=60.0) as s:
        busy = await s.open_session()
        call = await in_flight(s, busy, tool_call(11, "remember", {"fact": "answered while an initialize waited"}))
        caplog.set_level(logging.INFO, logger="velesmem.daemon")
        waiting = asyncio.create_task(s.open_session())
        await wait_until(lambda: "an initialize waits up to" in caplog.text, "the initialize to wait for room")
        answer = await call.finish()
        admitted = await asyncio.wait_for(waiting, 30)
        assert "id_str" in answer["result"]["structuredContent"], answer
        assert (await s.call(admitted, TOOLS_LIST)).status_code == 200
        assert (await s.call(busy, TOOLS_LIST)).status_code == 404


# --- body gate ---------------------------------------------------------------------------------

async def test_a_body_over_the_cap_gets_413_and_one_within_it_reaches_the_tool(tmp_path: Path) -> None:
    """Over the cap: 413 before any tool runs. Within it (5 MiB, over the SDK's own 4 MiB default):
    the tool sees it and refuses it by remember's 2 KiB fact cap, as a JSON-RPC error."""
    cap = 6 * 1024 * 1024
    async with serve(tmp_path, http_max_body_bytes=cap) as s:
        session_id = await s.open_session()
        refused = await s.call(session_id, tool_call(6, "remember", {"fact": "x" * (cap + 1)}))
        assert refused.status_code == 413, refused.text
        answer = await s.call(session_id, tool_call(7, "remember", {"fact": "y" * (5 * 1024 * 1024)}))
        assert answer.status_code == 200, answer.text[:300]
        error = answer.json()["error"]
        assert error["code"] == -32602 and "2048" in json.dumps(error), error


# --- duplicate request ids ---------------------------------------------------------------------

async def test_concurrent_requests_reusing_one_id_are_answered_or_refused_with_409(served: Served) -> None:
    session_id = await served.open_session()
    await served.call(session_id, tool_call(8, "remember", {"fact": "ids must be unique per session"}))
    wide = tool_call(77, "recall_fused", {"query": "who reuses ids", "k": 10, "hops": 10, "pool": 1000})
    answers = await asyncio.gather(*(served.call(session_id, wide) for _ in range(12)))
    served_ok = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code == 409]
    assert len(served_ok) + len(refused) == len(answers), [(a.status_code, a.text[:200]) for a in answers]
    assert served_ok and refused, "the requests did not overlap"
    for answer in refused:
        error = answer.json()
        assert error["id"] == 77 and error["error"]["code"] == -32600
        assert "request id 77 is already in flight" in error["error"]["message"]
    again = await served.call(session_id, wide)  # once answered, the id is free again
    assert again.status_code == 200 and '"result"' in again.text


async def test_the_same_id_on_two_sessions_is_not_a_duplicate(served: Served) -> None:
    one, two = await served.open_session(), await served.open_session()
    wide = tool_call(9, "recall_fused", {"query": "same id elsewhere", "k": 5, "hops": 5, "pool": 500})
    answers = await asyncio.gather(served.call(one, wide), served.call(two, wide))
    assert [a.status_code for a in answers] == [200, 200], [a.text[:200] for a in answers]
    assert all(json.loads(a.text)["id"] == 9 for a in answers)

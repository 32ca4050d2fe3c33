"""The session cap never locks clients out: at the cap the least recently active idle session is
closed to make room, only busy sessions are never touched, and idle ones expire on their own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import ACCEPT, LEGACY_INIT, Daemon, open_session, session_headers, structured, wait_for

from velesmem import limits

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LEAKED = 200
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _touch(daemon: Daemon, http: httpx.Client, session_id: str) -> int:
    """One request on the session (which makes it the most recently active); its HTTP status."""
    return http.post(daemon.url, headers=session_headers(session_id), json=TOOLS_LIST).status_code


def test_session_cap_evicts_least_recently_active_idle_session(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_MAX_SESSIONS="3").start()
    with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
        first, second, third = (open_session(daemon, http) for _ in range(3))
        assert _touch(daemon, http, first) == 200  # first is now more recent than second and third

        fourth = open_session(daemon, http)  # at the cap: the least recently active idle one goes

        assert _touch(daemon, http, second) == 404
        assert [_touch(daemon, http, s) for s in (first, third, fourth)] == [200, 200, 200]
        fifth = open_session(daemon, http)  # now first is the least recently active
        assert _touch(daemon, http, first) == 404
        assert [_touch(daemon, http, s) for s in (third, fourth, fifth)] == [200, 200, 200]
    assert "session cap (3) reached: closed the least recently active idle session" in daemon.output()


def test_session_cap_refuses_in_words_only_when_every_session_is_busy(make_daemon: Callable[..., Daemon]) -> None:
    """Two sessions each hold a GET stream (as every live client does): nothing is idle, so a
    third is refused with the worded 503. Once one stream closes, that session is the one evicted."""
    daemon = make_daemon(VELESDB_MEMORY_HTTP_MAX_SESSIONS="2").start()
    with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
        kept, dropped = open_session(daemon, http), open_session(daemon, http)
        get = {"Accept": "text/event-stream"}
        with http.stream("GET", daemon.url, headers=session_headers(kept) | get) as kept_stream:
            assert kept_stream.status_code == 200
            with http.stream("GET", daemon.url, headers=session_headers(dropped) | get) as dropped_stream:
                assert dropped_stream.status_code == 200
                refused = http.post(daemon.url, json=LEGACY_INIT, headers=ACCEPT)
                assert refused.status_code == 503
                message = refused.json()["error"]["message"]
                assert "too many open MCP sessions" in message and "VELESDB_MEMORY_HTTP_MAX_SESSIONS" in message
            # The dropped session's stream is closed: it is idle now, and goes first.
            admitted = wait_for(lambda: (r := http.post(daemon.url, json=LEGACY_INIT, headers=ACCEPT))
                                .status_code == 200 and r, 10, "the idle session to make room")
            assert admitted.headers["mcp-session-id"] not in (kept, dropped)
            assert _touch(daemon, http, dropped) == 404
            assert _touch(daemon, http, kept) == 200


async def test_two_hundred_leaked_sessions_never_lock_a_new_client_out(shared_daemon: Daemon) -> None:
    """A live client (legacy handshake, GET stream open) is connected while 200 clients open a
    session each and leave without closing it (as the Inspector CLI and mcp-remote do). Past the
    cap of 64 the oldest leaked sessions make room; the live client and a new one still work."""
    async with shared_daemon.client(mode="legacy") as live:
        saved = structured(await live.call_tool("remember", {"fact": "written before the session leak"}))

        def leak() -> list[str]:
            with httpx.Client(verify=shared_daemon.ssl_context(), timeout=10) as http:
                return [open_session(shared_daemon, http) for _ in range(LEAKED)]

        leaked = await asyncio.to_thread(leak)
        assert len(set(leaked)) == LEAKED

        async with shared_daemon.client(mode="legacy") as fresh:
            found = structured(await fresh.call_tool("recall", {"query": "written before the session leak", "k": 3}))
            assert saved["id_str"] in [m["id_str"] for m in found["memories"]]
        assert structured(await live.call_tool("memory_status", {}))

    async with httpx.AsyncClient(verify=shared_daemon.ssl_context(), timeout=10) as http:
        oldest = await http.post(shared_daemon.url, headers=session_headers(leaked[0]), json=TOOLS_LIST)
        newest = await http.post(shared_daemon.url, headers=session_headers(leaked[-1]), json=TOOLS_LIST)
    assert (oldest.status_code, newest.status_code) == (404, 200)
    assert limits.DEFAULT_HTTP_MAX_SESSIONS < LEAKED


def test_an_idle_session_expires_and_its_id_is_forgotten(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(VELESMEM_INTERNAL_SESSION_IDLE_SECONDS="1.5").start()
    with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
        session_id = open_session(daemon, http)
        assert _touch(daemon, http, session_id) == 200
        # Each probe is itself activity, so probes come further apart than the idle timeout: the
        # first one after a quiet spell finds the session gone, its id answering 404.
        wait_for(lambda: _touch(daemon, http, session_id) == 404, 15, "the idle session to expire", poll_s=2.5)


def test_leaked_sessions_expire_after_a_few_minutes_not_half_an_hour() -> None:
    from velesmem.daemon.tuning import Tuning

    assert Tuning().session_idle_s == limits.HTTP_SESSION_IDLE_SECONDS <= 5 * 60

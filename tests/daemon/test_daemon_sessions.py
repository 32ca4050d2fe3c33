"""No local process can lock clients out: at the session cap the least recently active session is
closed to make room (a leaked one first, one holding a GET stream last, its stream ended), never
one with a call in flight; initializes that arrive together are all admitted; idle sessions expire
on their own."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import (
    read_until,
    ACCEPT, LEGACY_INIT, Daemon, open_session, session_headers, start_on_port_zero, structured, tls_socket, wait_for,
)

from velesmem import limits

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LEAKED = 200
CONCURRENT = 100
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _touch(daemon: Daemon, http: httpx.Client, session_id: str) -> int:
    """One request on the session (which makes it the most recently active); its HTTP status."""
    return http.post(daemon.url, headers=session_headers(session_id), json=TOOLS_LIST).status_code


def test_session_cap_closes_the_least_recently_active_session(make_daemon: Callable[..., Daemon]) -> None:
    daemon = start_on_port_zero(make_daemon(VELESDB_MEMORY_HTTP_MAX_SESSIONS="3"))
    with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
        first, second, third = (open_session(daemon, http) for _ in range(3))
        assert _touch(daemon, http, first) == 200  # first is now more recent than second and third

        fourth = open_session(daemon, http)  # at the cap: the least recently active one goes

        assert _touch(daemon, http, second) == 404
        assert [_touch(daemon, http, s) for s in (first, third, fourth)] == [200, 200, 200]
        fifth = open_session(daemon, http)  # now first is the least recently active
        assert _touch(daemon, http, first) == 404
        assert [_touch(daemon, http, s) for s in (third, fourth, fifth)] == [200, 200, 200]
    assert "session cap (3) reached: closed the least recently active session with no call in flight" \
        in daemon.output()


def _open_stream(daemon: Daemon, session_id: str) -> ssl.SSLSocket:
    """A raw TLS connection holding the session's GET stream open (its answer head read)."""
    sock = tls_socket(daemon)
    head = session_headers(session_id) | {"Accept": "text/event-stream"}
    sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
                  + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n").encode())
    answer = read_until(sock, b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    return sock



def test_a_new_client_still_works_while_64_sessions_hold_get_streams(make_daemon: Callable[..., Daemon]) -> None:
    """64 sessions (the default cap) each hold a GET stream, as a local process hogging the
    daemon would: a new client still gets in, and the session closed for it is the least
    recently active one, its stream ended."""
    daemon = start_on_port_zero(make_daemon())
    streams: list[ssl.SSLSocket] = []
    try:
        with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
            held = [open_session(daemon, http) for _ in range(limits.DEFAULT_HTTP_MAX_SESSIONS)]
            streams = [_open_stream(daemon, session_id) for session_id in held]

            async def use_a_new_client() -> dict[str, object]:
                async with daemon.client(mode="legacy") as client:
                    return structured(await client.call_tool("remember", {"fact": "got in past 64 streams"}))

            assert asyncio.run(use_a_new_client())["id_str"]
            assert read_until(streams[0], b"0\r\n\r\n").endswith(b"0\r\n\r\n")  # its stream ended
            assert _touch(daemon, http, held[0]) == 404
            assert _touch(daemon, http, held[-1]) == 200
    finally:
        for sock in streams:
            sock.close()
    assert "its GET stream ended" in daemon.output()


# Calls in flight across the cap (a body half sent) are tested in process, where the half-sent
# body is really in flight before the next request: tests/daemon/test_app_in_process.py.


async def test_one_hundred_concurrent_initializes_on_a_fresh_daemon_all_succeed(
    make_daemon: Callable[..., Daemon],
) -> None:
    """More initializes at once than the cap (64): each is admitted, the ones past the cap by
    closing a session that went no further than its handshake; none gets 503."""
    daemon = start_on_port_zero(make_daemon())
    pool = httpx.Limits(max_connections=CONCURRENT, max_keepalive_connections=CONCURRENT)
    async with httpx.AsyncClient(verify=daemon.ssl_context(), timeout=60, limits=pool) as http:
        answers = await asyncio.gather(*(http.post(daemon.url, json=LEGACY_INIT, headers=ACCEPT)
                                         for _ in range(CONCURRENT)))
    assert sorted({r.status_code for r in answers}) == [200]
    assert len({r.headers["mcp-session-id"] for r in answers}) == CONCURRENT
    async with daemon.client(mode="legacy") as client:
        assert structured(await client.call_tool("memory_status", {}))


async def test_two_hundred_rapid_initializes_close_neither_a_live_nor_a_recently_used_session(
    shared_daemon: Daemon,
) -> None:
    """A live client (legacy handshake, GET stream open) and a quiet one (no stream, one call
    made) are connected while 200 clients open a session each and leave without closing it (as
    the Inspector CLI and mcp-remote do). Past the cap of 64 the oldest leaked sessions make room;
    the live client, the quiet one and a new one still work."""
    async with shared_daemon.client(mode="legacy") as live:
        saved = structured(await live.call_tool("remember", {"fact": "written before the session leak"}))
        async with httpx.AsyncClient(verify=shared_daemon.ssl_context(), timeout=10) as http:
            quiet = await asyncio.to_thread(open_session, shared_daemon)
            assert (await http.post(shared_daemon.url, headers=session_headers(quiet), json=TOOLS_LIST)).status_code == 200

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
        still_quiet = await http.post(shared_daemon.url, headers=session_headers(quiet), json=TOOLS_LIST)
    assert (oldest.status_code, newest.status_code, still_quiet.status_code) == (404, 200, 200)
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

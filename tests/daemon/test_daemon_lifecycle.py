"""The daemon's life: one per store, loopback-only, body cap on streamed bodies, a draining SIGTERM,
and a CA kept across restarts while the leaf is re-issued. (Sessions: test_daemon_sessions.py.)"""

from __future__ import annotations

import asyncio
import signal
import stat
import time
from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import Daemon, raw_post, structured, wait_for

from tests.support.bounds import record

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_second_daemon_on_the_same_store_exits_fast_with_the_lock_message(
    make_daemon: Callable[..., Daemon],
) -> None:
    first = make_daemon().start()
    second = make_daemon(root=first.root)  # same store and TLS dir, another port
    t0 = time.monotonic()
    second.start(wait=False)
    assert second.proc is not None
    code = second.proc.wait(timeout=120)  # it exits by itself: no health check, no wait
    record("daemon: a second daemon on a held store exits", time.monotonic() - t0, 2.0)
    assert code != 0
    out = second.output()
    assert "lock" in out.lower() and str(first.store) in out, out
    assert first.healthy()  # the first daemon is untouched


def test_non_loopback_bind_is_refused_unless_remote_is_allowed(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_BIND="0.0.0.0:1")
    daemon.start(wait=False)
    assert daemon.proc is not None
    assert daemon.proc.wait(timeout=10) != 0
    out = daemon.output()
    assert "VELESDB_MEMORY_HTTP_ALLOW_REMOTE" in out and "0.0.0.0" in out, out
    assert not daemon.store.exists()  # refused before touching the store


def test_insecure_mode_warns_loudly_and_serves_plain_http(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_INSECURE="1")
    daemon.start(wait=False)
    url = f"http://127.0.0.1:{daemon.port}/health"

    def up() -> bool:
        assert daemon.proc is not None and daemon.proc.poll() is None, daemon.output()
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, 30, "insecure daemon /health")
    out = daemon.output()
    assert "WARNING" in out and "PLAIN HTTP" in out and f"http://127.0.0.1:{daemon.port}/mcp" in out
    assert not (daemon.tls_dir / "ca-key.pem").exists()
    assert daemon.stop() == 0


def test_streamed_body_over_the_cap_gets_413_and_a_declared_one_before_sending(
    make_daemon: Callable[..., Daemon],
) -> None:
    cap = 64 * 1024
    daemon = make_daemon(VELESDB_MEMORY_HTTP_MAX_BODY_BYTES=str(cap)).start()
    declared = raw_post(daemon, f"Content-Length: {cap + 1}\r\n", [])
    assert declared.startswith(b"HTTP/1.1 413"), declared
    chunk = b"x" * 16 * 1024
    chunks = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (cap // len(chunk) + 2)
    streamed = raw_post(daemon, "Transfer-Encoding: chunked\r\n", chunks)
    assert streamed.startswith(b"HTTP/1.1 413"), streamed
    assert b"VELESDB_MEMORY_HTTP_MAX_BODY_BYTES" in streamed or b"413" in streamed
    assert daemon.healthy()


async def test_sigterm_drains_in_flight_calls_then_the_store_and_ca_survive_a_restart(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon().start()
    tls = daemon.tls_dir
    ca_before = (tls / "ca-cert.pem").read_bytes(), (tls / "ca-key.pem").read_bytes()
    leaf_before = (tls / "leaf-cert.pem").read_bytes()
    assert _mode(tls) == 0o700
    assert (_mode(tls / "ca-key.pem"), _mode(tls / "leaf-key.pem")) == (0o600, 0o600)
    assert (_mode(tls / "ca-cert.pem"), _mode(tls / "leaf-cert.pem")) == (0o644, 0o644)

    acknowledged: dict[str, float] = {}  # id_str → when its answer arrived
    sigterm_at: list[float] = []

    async with daemon.client() as client:
        async def remember(i: int) -> None:
            result = await client.call_tool("remember", {"fact": f"drain fact number {i} of the burst"})
            acknowledged[structured(result)["id_str"]] = time.monotonic()
            if not sigterm_at:  # the first answer is back: the rest of the burst is in flight
                sigterm_at.append(time.monotonic())
                assert daemon.proc is not None
                daemon.proc.send_signal(signal.SIGTERM)

        outcomes = await asyncio.gather(*(remember(i) for i in range(48)), return_exceptions=True)

    assert daemon.proc is not None
    code = await asyncio.to_thread(daemon.proc.wait, 30)
    assert code == 0, daemon.output()
    assert "stopped; store closed" in daemon.output()
    finished_after_signal = [t for t in acknowledged.values() if t > sigterm_at[0]]
    assert finished_after_signal, "no call finished after SIGTERM: nothing was drained"
    # A call sent after the signal may be refused ("shutting down"), or, when the client reuses a
    # keep-alive connection the drain is closing, meet the close before the daemon read it (HTTP/1.1's
    # own race: the client sees a ReadError); it is then not acknowledged. Any other failure is a
    # call dropped mid-way. Every acknowledged call is in the store after the restart (below).
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    unread = ("ReadError", "RemoteProtocolError", "ConnectError")
    assert all("shutting down" in f or "503" in f or any(u in f for u in unread) for f in failures), failures
    assert len(acknowledged) + len(failures) == 48

    restarted = make_daemon(root=daemon.root, port=daemon.port).start()
    assert ((tls / "ca-cert.pem").read_bytes(), (tls / "ca-key.pem").read_bytes()) == ca_before
    assert (tls / "leaf-cert.pem").read_bytes() != leaf_before
    async with restarted.client() as client:
        page = structured(await client.call_tool("list_memories", {"limit": 1000}))
    assert set(acknowledged) <= {m["id_str"] for m in page["memories"]}
    assert restarted.stop() == 0

"""The TLS leaf is renewed while the daemon runs: with a leaf that lives seconds, a client still
connects (strictly verified against the same CA) after the first leaf expired, and a connection
opened before the renewal keeps working on the leaf it negotiated — no restart."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Callable

import pytest
from cryptography import x509
from daemon_helpers import Daemon, structured, tls_socket, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LEAF_SECONDS = 3


def _peer(tls: ssl.SSLSocket) -> x509.Certificate:
    der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def _health(tls: ssl.SSLSocket, port: int) -> bool:
    tls.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    answer = b""
    while not answer.endswith(b"}"):  # the JSON body's end
        chunk = tls.recv(65536)
        assert chunk, answer
        answer += chunk
    return answer.startswith(b"HTTP/1.1 200")


async def test_leaf_is_renewed_before_expiry_without_restart(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(VELESMEM_INTERNAL_LEAF_LIFETIME_SECONDS=str(LEAF_SECONDS)).start()
    assert daemon.proc is not None
    pid = daemon.proc.pid
    ca = daemon.ca.read_bytes()
    with tls_socket(daemon) as early:
        first = _peer(early)

        def first_leaf_expired() -> bool:
            # The early connection stays in use throughout (a request keeps it from idling out).
            assert _health(early, daemon.port) and _peer(early).serial_number == first.serial_number
            return dt.datetime.now(dt.UTC) > first.not_valid_after_utc + dt.timedelta(seconds=1)

        wait_for(first_leaf_expired, 30, "the first leaf to expire", poll_s=0.5)

        with tls_socket(daemon) as late:  # strict verification: an expired leaf would fail here
            current = _peer(late)
            assert _health(late, daemon.port)
        assert current.serial_number != first.serial_number
        assert current.not_valid_after_utc > dt.datetime.now(dt.UTC)
        assert _health(early, daemon.port)  # the connection from before still works

    async with daemon.client() as client:
        assert structured(await client.call_tool("remember", {"fact": "served on a renewed leaf"}))["id_str"]
    assert daemon.proc.pid == pid and daemon.proc.poll() is None  # no restart
    assert daemon.ca.read_bytes() == ca  # same CA: nothing to trust again
    assert "renewed the TLS leaf certificate (same CA, no restart)" in daemon.output()

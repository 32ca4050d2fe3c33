"""Stopping is quick and orderly: SIGTERM marks the drain first (new calls are refused in words
while the socket still listens), lets the call in flight finish, then closes — and with idle
clients attached it ends their streams and sessions at once (bench/shutdown.py times it)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import (
    read_until,
    ACCEPT, LEGACY_INIT, Daemon, open_session, session_headers, start_on_port_zero, tls_socket, wait_for,
)

pytestmark = [pytest.mark.integration]

END_OF_CHUNKS = b"0\r\n\r\n"  # the last chunk of a response that was ended, not cut


def _request_head(daemon: Daemon, method: str, headers: dict[str, str], length: int | None = None) -> bytes:
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{daemon.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if length is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()



def test_sigterm_refuses_new_calls_in_words_while_an_in_flight_call_finishes(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon().start()
    session_id = open_session(daemon)
    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "remember", "arguments": {"fact": "finished during the drain"}}}).encode()
    with tls_socket(daemon) as in_flight:
        in_flight.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n\r\n".encode())
        assert read_until(in_flight, b"}").startswith(b"HTTP/1.1 200")  # the connection is up
        # The head asks for 100-continue: uvicorn answers it only once the app reads the body, the
        # positive signal that the call is in flight in the daemon. Then half the body is sent.
        head = _request_head(daemon, "POST", session_headers(session_id) | {"Expect": "100-continue"},
                             len(call))
        in_flight.sendall(head)
        assert read_until(in_flight, b"\r\n\r\n").startswith(b"HTTP/1.1 100")
        in_flight.sendall(call[:40])
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGTERM)

        with httpx.Client(verify=daemon.ssl_context(), timeout=10) as fresh:
            # Until the signal is handled a new call may still be served; then, on a new
            # connection, it is refused with the documented words — never "connection refused".
            refused = wait_for(lambda: (r := fresh.post(daemon.url, json=LEGACY_INIT, headers=ACCEPT))
                               .status_code == 503 and r, 10, "the drain to refuse a new call")
        assert "shutting down" in refused.json()["error"]["message"]
        assert daemon.proc.poll() is None  # still draining: the call in flight holds it open

        in_flight.sendall(call[40:])
        answer = read_until(in_flight, b'"id":7')
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert b"id_str" in answer, answer[-500:]
    assert daemon.proc.wait(30) == 0
    assert "stopped; store closed" in daemon.output()


def test_sigterm_with_clients_attached_ends_their_streams_and_exits_cleanly(
    make_daemon: Callable[..., Daemon],
) -> None:
    """Idle clients hold connections the way real ones do: two sessions with a GET stream open
    each, a leaked session, a keep-alive connection after a request, and one that connected and
    sent nothing. On SIGTERM both streams are ended (the chunked body closed, not cut) and the
    daemon exits with 0. How quickly is measured by bench/shutdown.py, not here."""
    daemon = start_on_port_zero(make_daemon())
    with httpx.Client(verify=daemon.ssl_context(), timeout=10) as http:
        streamed = [open_session(daemon, http) for _ in range(2)]
        open_session(daemon, http)  # leaked: never ended, no stream
    sockets = [tls_socket(daemon) for _ in range(4)]
    *streams, keep_alive, _silent = sockets
    try:
        for sock, session_id in zip(streams, streamed):
            sock.sendall(_request_head(daemon, "GET", session_headers(session_id) | {"Accept": "text/event-stream"}))
            assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        keep_alive.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n\r\n".encode())
        assert read_until(keep_alive, b"}").startswith(b"HTTP/1.1 200")
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGTERM)
        ends = [read_until(sock, END_OF_CHUNKS) for sock in streams]
        code = daemon.proc.wait(30)
    finally:
        for sock in sockets:
            sock.close()
    assert code == 0, daemon.output()
    assert all(end.endswith(END_OF_CHUNKS) for end in ends), ends
    assert "stopped; store closed" in daemon.output()

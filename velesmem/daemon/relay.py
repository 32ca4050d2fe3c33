"""Relay MCP between a stdio client and the daemon's ``/mcp`` (the light attach path).

One JSON-RPC message per stdin line goes to the daemon as a POST (requests on their own thread,
so a slow tool call does not hold up the next one; notifications and responses in order); every
message the daemon answers with, or sends on the session's GET stream, goes to stdout as one line.
The client's ``initialize`` (and ``notifications/initialized``) are kept: when the daemon restarts
(its session answers 404, or the connection drops) they are replayed for a new session and the
call that failed is sent again. If the daemon stays away for ``reconnect_s`` the relay answers
what is pending with an error and exits; it exits 0 when stdin closes.

The relay speaks the initialize-handshake era of MCP, as every agent CLI does: a 2026-era
``server/discover`` probe is answered "method not found", so a client falls back to ``initialize``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from velesmem.daemon.probe import Found
from velesmem.daemon.upstream import PROTOCOL_HEADER, SESSION_HEADER, Answer, Gone, Upstream

EXIT_OK = 0
EXIT_DAEMON_GONE = 1
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
SESSION_UNKNOWN = 404  # the daemon no longer knows our session: it restarted, or idled it out
NO_STREAM = (405, 406)  # a daemon without a GET stream for the session
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 1.0
MAX_ATTEMPTS = 3  # sends of one message (each after a successful reconnect)
STREAM_PAUSE_S = 1.0  # between GET streams that end at once, so a refusing daemon is not hammered


def say(text: str) -> None:
    """One line on stderr, where MCP clients collect a server's log."""
    print(f"velesdb-memory: {text}", file=sys.stderr, flush=True)


class Relay:
    """The relay's state: the session, the replayable handshake, what is in flight."""

    def __init__(self, upstream: Upstream, out: BinaryIO, reconnect_s: float,
                 locate: Callable[[], Found | None] | None = None) -> None:
        self.upstream = upstream
        self.locate = locate  # where the settings say the daemon is now (None: where it was)
        self.out = out
        self.reconnect_s = reconnect_s
        self.closed = threading.Event()  # stdin ended: the client is gone
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._recover_lock = threading.Lock()
        self._session: str | None = None
        self._protocol: str | None = None
        self._generation = 0  # bumped by every reconnect
        self._init: bytes | None = None  # the client's initialize, as it sent it
        self._initialized: bytes | None = None  # its notifications/initialized
        self._pending: dict[int, Any] = {}  # request ids in flight, by thread
        self._listening = False
        self._workers: set[threading.Thread] = set()  # requests in flight

    # --- stdin side ---------------------------------------------------------------------------

    def run(self, inp: BinaryIO) -> int:
        """Relay until stdin closes; then let the calls in flight answer, end the session and
        return 0."""
        while True:
            line = inp.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                say("dropped a line from the client that is not JSON")
                continue
            self._dispatch(line, message)
        self.closed.set()
        for worker in list(self._workers):  # calls already sent still get their answers
            worker.join()
        session = self._session
        if session:
            self.upstream.delete({SESSION_HEADER: session})
        return EXIT_OK

    def _dispatch(self, line: bytes, message: Any) -> None:
        method = message.get("method") if isinstance(message, dict) else None
        is_request = isinstance(message, dict) and "id" in message and method is not None
        if method == "server/discover" and is_request:
            self._emit_error(message["id"], METHOD_NOT_FOUND, "Method not found: server/discover "
                             "(this server speaks the initialize handshake)")
        elif method == "initialize" and is_request:
            self._init = line
            self._handshake(forward=True)
        elif is_request:
            worker = threading.Thread(target=self._call, args=(line, message["id"]), daemon=True)
            self._workers.add(worker)
            worker.start()
        else:  # notifications and responses, in order: initialized must precede what follows
            if method == "notifications/initialized":
                self._initialized = line
            self._call(line, None)

    # --- daemon side --------------------------------------------------------------------------

    def _headers(self) -> tuple[int, dict[str, str]]:
        with self._state_lock:
            headers = {}
            if self._session:
                headers[SESSION_HEADER] = self._session
            if self._protocol:
                headers[PROTOCOL_HEADER] = self._protocol
            return self._generation, headers

    def _call(self, body: bytes, request_id: Any) -> None:
        """Send one message; on a lost session or connection, reconnect and send it again."""
        key = threading.get_ident()
        if request_id is not None:
            self._pending[key] = request_id
        try:
            for _ in range(MAX_ATTEMPTS):
                generation, headers = self._headers()
                try:
                    answer = self.upstream.post(body, headers, self._emit)
                except Gone:
                    answer = None
                if answer is not None and not (answer.status == SESSION_UNKNOWN and SESSION_HEADER in headers):
                    if answer.status >= 400 and request_id is not None:
                        self._emit_http_error(request_id, answer)
                    return
                if not self._recover(generation):
                    self._gone()
            if request_id is not None:
                self._emit_error(request_id, INTERNAL_ERROR, "the velesmem daemon kept losing the session")
        finally:
            self._pending.pop(key, None)
            self._workers.discard(threading.current_thread())

    def _handshake(self, forward: bool) -> bool:
        """POST the client's initialize (and initialized); take the session and version from the
        reply. ``forward``: the client is waiting for this reply (else it is a replay)."""
        assert self._init is not None
        init_id = json.loads(self._init).get("id")
        result: dict[str, Any] = {}

        def on_message(raw: bytes) -> None:
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == init_id:
                if isinstance(message.get("result"), dict):
                    result.update(message["result"])
                if not forward:
                    return
            elif not forward:
                return
            self._emit(raw)

        answer: Answer | None = None
        if forward:
            for attempt in range(MAX_ATTEMPTS):
                try:
                    answer = self.upstream.post(self._init, {}, on_message)
                    break
                except Gone:
                    if attempt == MAX_ATTEMPTS - 1 or not self._wait_for_daemon():
                        self._gone()
            assert answer is not None
            if answer.status >= 400:
                self._emit_http_error(init_id, answer)
                return False
        else:
            answer = self.upstream.post(self._init, {}, on_message)  # Gone: the caller retries
            if answer.status != 200 or not result:
                return False
        with self._state_lock:
            self._session = answer.session_id
            self._protocol = result.get("protocolVersion") if isinstance(
                result.get("protocolVersion"), str) else None
        if not forward and self._initialized is not None:
            _, headers = self._headers()
            self.upstream.post(self._initialized, headers, lambda raw: None)
        if answer.session_id and not self._listening:
            self._listening = True
            threading.Thread(target=self._listen, daemon=True).start()
        return True

    def _wait_for_daemon(self) -> bool:
        """Before the first session: wait (up to reconnect_s) until the daemon answers again."""
        deadline = time.monotonic() + self.reconnect_s
        delay = RETRY_FIRST_S
        while not self.closed.is_set():
            if self._find():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, RETRY_MAX_S)
        return False

    def _find(self) -> bool:
        """Whether a daemon for our store answers, looked up afresh (the installer record may
        name another port by now, the TLS dir a new CA); the upstream follows it there."""
        if self.locate is None:
            return self.upstream.healthy()
        found = self.locate()
        if found is None:
            return False
        if found.endpoint.url() != self.upstream.endpoint.url():
            say(f"the daemon is now at {found.endpoint.url()}")
        self.upstream.retarget(found.endpoint, found.connection)
        return True

    def _recover(self, seen_generation: int) -> bool:
        """Get a new session (replaying the handshake) unless another thread already did since
        ``seen_generation``; False when the daemon stayed away for ``reconnect_s``."""
        with self._recover_lock:
            if self._generation != seen_generation:
                return True
            say("lost the daemon's session; reconnecting")
            deadline = time.monotonic() + self.reconnect_s
            delay = RETRY_FIRST_S
            while not self.closed.is_set():
                try:
                    ok = self._find() and (self._handshake(forward=False) if self._init else True)
                except Gone:
                    ok = False
                if ok:
                    with self._state_lock:
                        self._generation += 1
                    say(f"reconnected to {self.upstream.endpoint.url()}")
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, RETRY_MAX_S)
            return False

    def _listen(self) -> None:
        """Hold the session's GET stream (server-sent messages; its end is how a stopping daemon
        is noticed between calls), reconnecting when the daemon goes and comes back."""
        while not self.closed.is_set():
            generation, headers = self._headers()
            if SESSION_HEADER not in headers:
                return
            began = time.monotonic()
            try:
                answer: Answer | None = self.upstream.listen(headers, self._emit)
            except Gone:
                answer = None
            if self.closed.is_set():
                return
            if answer is not None and answer.status in NO_STREAM:
                return
            if answer is None or answer.status == SESSION_UNKNOWN:
                if not self._recover(generation):
                    self._gone()
                continue
            if time.monotonic() - began < STREAM_PAUSE_S:
                self.closed.wait(STREAM_PAUSE_S)

    def _gone(self) -> None:
        """The daemon stayed away: answer what is pending, say so, exit."""
        why = (f"the velesmem daemon at {self.upstream.endpoint.url()} is gone "
               f"(no answer for {self.reconnect_s:g} s)")
        for request_id in list(self._pending.values()):
            self._emit_error(request_id, INTERNAL_ERROR, why)
        if self.closed.is_set():  # the client left while we were waiting: a normal end
            os._exit(EXIT_OK)
        say(why + "; exiting")
        os._exit(EXIT_DAEMON_GONE)

    # --- stdout side --------------------------------------------------------------------------

    def _emit(self, raw: bytes) -> None:
        if b"\n" in raw:  # one message per line, whatever the daemon's formatting
            raw = json.dumps(json.loads(raw), separators=(",", ":")).encode()
        with self._write_lock:
            try:
                self.out.write(raw + b"\n")
                self.out.flush()
            except OSError:  # the client closed its end: stdin will follow
                self.closed.set()

    def _emit_error(self, request_id: Any, code: int, message: str) -> None:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        self._emit(json.dumps(error, separators=(",", ":")).encode())

    def _emit_http_error(self, request_id: Any, answer: Answer) -> None:
        """An HTTP error status as the JSON-RPC error of the request (the daemon's own error
        object when its body has one)."""
        try:
            body = json.loads(answer.body)
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if not (isinstance(error, dict) and isinstance(error.get("code"), int)):
            text = answer.body.decode("utf-8", "replace").strip()[:500]
            error = {"code": INTERNAL_ERROR, "message": f"HTTP {answer.status} from the daemon: {text}"}
        self._emit(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error},
                              separators=(",", ":")).encode())


def run_relay(found: Found, locate: Callable[[], Found | None] | None = None) -> int:
    """Relay this process's stdin/stdout to the daemon ``found`` until stdin closes (0) or the
    daemon is gone for good (1); ``locate`` finds it again after it went away."""
    upstream = Upstream(found.endpoint, found.connection)
    scheme = "HTTPS" if found.endpoint.context else "HTTP"
    say(f"attaching to {found.endpoint.url()} (stdio ↔ {scheme} relay, CA {found.ca})")
    relay = Relay(upstream, sys.stdout.buffer, found.reconnect_s, locate)
    try:
        return relay.run(sys.stdin.buffer)
    except KeyboardInterrupt:
        return 130
    finally:
        upstream.close()

"""Helpers for the daemon tests: a real ``velesdb-memory --http`` subprocess on a free port, with
temp store and TLS dirs, real MCP clients verifying its certificate against the generated CA, and
conditions polled with deadlines (never fixed sleeps)."""

from __future__ import annotations

import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.support import free_port as free_port  # re-exported for the tests of this folder
from tests.support import wait_for as wait_for
from velesmem.daemon.tls import client_ssl_context

START_DEADLINE_S = 30.0
STOP_DEADLINE_S = 30.0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The current environment without any VELESDB_MEMORY_*, HOME pointed at ``home``, the hash
    embedder (fast; ``VELESDB_MEMORY_EMBEDDER=""`` in ``extra`` leaves the default), plus
    ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env["HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env["VELESDB_MEMORY_EMBEDDER"] = "hash"
    env.update(extra)
    if not env["VELESDB_MEMORY_EMBEDDER"]:
        del env["VELESDB_MEMORY_EMBEDDER"]
    return env


@dataclass
class Daemon:
    """One ``velesdb-memory --http`` subprocess and how to reach it."""

    root: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    nofile: int | None = None  # RLIMIT_NOFILE (soft and hard) for the daemon process
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.root / f"daemon-{self.port}.log"

    @property
    def store(self) -> Path:
        return Path(self.env["VELESDB_MEMORY_PATH"])

    @property
    def tls_dir(self) -> Path:
        return Path(self.env["VELESDB_MEMORY_TLS_DIR"])

    @property
    def ca(self) -> Path:
        return self.tls_dir / "ca-cert.pem"

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def ssl_context(self) -> ssl.SSLContext:
        return client_ssl_context(self.ca)

    def start(self, wait: bool = True, argv: tuple[str, ...] = ()) -> Daemon:
        nofile = self.nofile

        def limit_descriptors() -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "velesmem", "--http", *argv], env=self.env,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=None if nofile is None else limit_descriptors,
            )
        if wait:
            wait_for(self.healthy, START_DEADLINE_S, f"daemon /health on {self.base}\n{self.output()}")
        return self

    def healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.output()}")
        if not self.ca.exists():
            return False
        try:
            r = httpx.get(f"{self.base}/health", verify=self.ssl_context(), timeout=2)
        except (httpx.HTTPError, ssl.SSLError, OSError):
            return False
        return r.status_code == 200

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def client(self, **kw: Any) -> Client:
        """A fastmcp client; ``mode="legacy"`` speaks the 2025 handshake (a session, a GET stream)
        like mcp-remote and the Inspector, the default negotiates the sessionless 2026 protocol."""
        return Client(StreamableHttpTransport(self.url, verify=self.ssl_context()), **kw)

    def pid_status(self, key: str) -> int:
        """A ``/proc/<pid>/status`` figure in KiB (VmRSS, VmHWM) of the daemon (Linux)."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {key} in /proc/{self.proc.pid}/status")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return -1 if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"daemon ignored signal {sig}:\n{self.output()}") from None


LISTENING_LINE = re.compile(rb"listening on https://127\.0\.0\.1:(\d+)/mcp")


def start_on_port_zero(daemon: Daemon) -> Daemon:
    """Start ``daemon`` with ``--http-port 0`` (the system picks a free port, so no test races
    another for one), read the port from its "listening on https://127.0.0.1:PORT/mcp" line, and
    wait for /health on it."""
    daemon.start(wait=False, argv=("--http-port", "0"))

    def announced() -> int | None:
        assert daemon.proc is not None
        found = LISTENING_LINE.search(daemon.log.read_bytes()) if daemon.log.exists() else None
        if found is None and daemon.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {daemon.proc.returncode}:\n{daemon.output()}")
        return None if found is None else int(found.group(1))

    daemon.port = wait_for(announced, START_DEADLINE_S, f"the daemon's listening line\n{daemon.output()}")
    wait_for(daemon.healthy, START_DEADLINE_S, f"daemon /health on {daemon.base}\n{daemon.output()}")
    return daemon


LEGACY_INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "velesmem-tests", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def open_session(daemon: Daemon, http: httpx.Client | None = None) -> str:
    """Initialize a 2025-era session by hand (as mcp-remote does) and never close it: its id."""
    poster = http or httpx.Client(verify=daemon.ssl_context(), timeout=10)
    try:
        r = poster.post(daemon.url, json=LEGACY_INIT, headers=ACCEPT)
        assert r.status_code == 200, (r.status_code, r.text)
        session_id = r.headers["mcp-session-id"]
        done = poster.post(daemon.url, headers=session_headers(session_id),
                           json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, (done.status_code, done.text)
        return session_id
    finally:
        if http is None:
            poster.close()


def session_headers(session_id: str) -> dict[str, str]:
    return ACCEPT | {"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}


def tls_socket(daemon: Daemon, timeout: float = 10) -> ssl.SSLSocket:
    """A raw TLS connection to the daemon, verified against its CA."""
    raw = socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout)
    return daemon.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a fastmcp CallToolResult, failing loudly on a tool error."""
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def raw_post(daemon: Daemon, extra_headers: str, body_chunks: list[bytes]) -> bytes:
    """POST /mcp by hand over strict TLS: the head, then ``body_chunks``; return the answer's head.

    Sending stops early if the daemon already answered and closed (that is the point of a cap)."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{extra_headers}\r\n")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as raw:
        with daemon.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(head.encode())
            try:
                for chunk in body_chunks:
                    tls.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            answer = b""
            while b"\r\n\r\n" not in answer:
                try:
                    data = tls.recv(65536)
                except (ConnectionResetError, ssl.SSLError):
                    break
                if not data:
                    break
                answer += data
            return answer


def read_until(sock: ssl.SSLSocket, marker: bytes, deadline_s: float = 30) -> bytes:
    """Read until ``marker`` or the end of the connection (failing past the deadline)."""
    data = b""
    end = time.monotonic() + deadline_s
    while marker not in data:
        assert time.monotonic() < end, data[-300:]
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    return data

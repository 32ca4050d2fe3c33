"""Is the daemon up? A strict-TLS ``GET /health`` against the local CA, and who holds a port.

"Strict" means certificate chain and host name both verified (``ssl.create_default_context``
with the CA file) — never ``CERT_NONE``.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import socket
import ssl
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HEALTH_TIMEOUT_S = 5.0
STORE_HEADER = "x-velesdb-memory-store"  # velesmem.daemon.address names it; service/ stays below daemon/
POLL_INTERVAL_S = 0.2


@dataclass(frozen=True)
class Health:
    """``ok`` when /health answered 200 "OK"; otherwise ``kind`` says why: down, tls, http, no-ca,
    or exited (the daemon died while we waited for it)."""

    ok: bool
    kind: str
    detail: str = ""
    store: str = ""  # the store the daemon says it serves (its /health header)


def check_health(host: str, port: int, ca_cert: str | None,
                 context: ssl.SSLContext | None = None, timeout: float = HEALTH_TIMEOUT_S) -> Health:
    """GET https://host:port/health verified against ``ca_cert`` (or ``context``, e.g. the OS store)."""
    if context is None:
        if ca_cert is None or not Path(ca_cert).is_file():
            return Health(False, "no-ca", f"CA certificate {ca_cert} does not exist")
        context = ssl.create_default_context(cafile=ca_cert)
    conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        body = response.read(4096).decode("utf-8", "replace").strip()
        store = response.getheader(STORE_HEADER) or ""
    except ssl.SSLCertVerificationError as exc:
        return Health(False, "tls", exc.verify_message or str(exc))
    except ssl.SSLError as exc:
        return Health(False, "tls", str(exc))
    except (TimeoutError, ConnectionError, OSError) as exc:
        return Health(False, "down", str(exc) or type(exc).__name__)
    finally:
        conn.close()
    if response.status == 200 and health_ok(body):
        return Health(True, "ok", store=store)
    return Health(False, "http", f"HTTP {response.status} {body!r}")


def health_ok(body: str) -> bool:
    """Whether a ``/health`` body says the daemon serves (JSON ``status: ok``)."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "ok"


def wait_healthy(host: str, port: int, ca_cert: str, timeout: float,
                 still_starting: Callable[[], bool] = lambda: True) -> Health:
    """Poll /health until it answers, ``timeout`` passes, or ``still_starting()`` says it died."""
    deadline = time.monotonic() + timeout
    last = Health(False, "down", "not polled yet")
    while time.monotonic() < deadline:
        last = check_health(host, port, ca_cert, timeout=min(HEALTH_TIMEOUT_S, timeout))
        if last.ok or last.kind in ("tls", "http"):
            return last
        if not still_starting():
            return Health(False, "exited", "the daemon exited while starting")
        time.sleep(POLL_INTERVAL_S)
    why = "the daemon has not created its CA yet" if last.kind == "no-ca" else last.detail
    return Health(False, last.kind, f"no answer within {timeout:.0f} s ({why})")


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on host:port (a bind attempt fails with EADDRINUSE)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if sys.platform != "win32":  # allow TIME_WAIT leftovers; never steal a live listener
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES, getattr(errno, "WSAEADDRINUSE", -1),
                             getattr(errno, "WSAEACCES", -1)):
                return True
            raise
    return False


def port_holder(port: int) -> str | None:
    """Best effort (Linux /proc): "pid N (name)" of the process listening on ``port``."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    if not inodes:
        return None
    targets = {f"socket:[{inode}]" for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in targets:
                    name = Path(f"/proc/{pid}/comm").read_text().strip()
                    return f"pid {pid} ({name})"
        except OSError:
            continue
    return None

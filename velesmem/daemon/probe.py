"""Is a daemon serving *our* store running? Decided with the standard library only, from the same
settings every command reads (environment > installer record > defaults: any port), by a
``GET /health`` verified against the local CA.

The stdio launcher asks this before anything heavy loads: a yes means relay, a no means serve.
"""

from __future__ import annotations

import http.client
import json
import sys
from dataclasses import dataclass

from velesmem.config import Settings
from velesmem.daemon.address import CA_CERT_FILE, HEALTH_PATH, STORE_HEADER, daemon_address
from velesmem.daemon.upstream import (NETWORK_ERRORS, READ_TIMEOUT_S, SHORT_TIMEOUT_S, Endpoint,
                                      client_ssl_context)
from velesmem.errors import VelesmemError


@dataclass
class Found:
    """A daemon that answered for our store, and the connection it answered on (kept alive for
    the first relayed request)."""

    endpoint: Endpoint
    connection: http.client.HTTPConnection
    reconnect_s: float
    ca: str


def find_daemon(settings: Settings | None = None, *, explain: bool = False) -> Found | None:
    """The daemon serving ``settings``' store (default: this process's settings), or None when
    there is none we can trust: no CA, nothing listening, not healthy, or another store (said on
    stderr with ``explain``: when our store is locked, that is why we cannot attach)."""
    try:
        settings = settings or Settings.from_env()
        if settings.http:
            return None  # told to serve HTTPS itself, not to attach
        address = daemon_address(settings)
        ca = settings.tls_dir / CA_CERT_FILE
        if address.scheme == "https":
            if not ca.is_file():
                return None
            context = client_ssl_context(ca)
        else:
            context = None
        ours = str(settings.path.resolve())
    except (VelesmemError, OSError, ValueError):
        return None  # a bad setting or CA: serving reports it properly
    endpoint = Endpoint(address.connect_host, address.port, context, settings.auth_token)
    conn = endpoint.connect(SHORT_TIMEOUT_S)
    try:
        conn.request("GET", HEALTH_PATH, headers=endpoint.headers({"Accept": "application/json"}))
        response = conn.getresponse()
        raw = response.read()
        if response.status != 200:
            conn.close()
            return None
        body = json.loads(raw)
        theirs = (body.get("store") if isinstance(body, dict) else None) or response.getheader(STORE_HEADER)
        if not isinstance(body, dict) or body.get("status") != "ok":
            conn.close()
            return None
    except (*NETWORK_ERRORS, ValueError):
        conn.close()
        return None
    if theirs != ours:
        conn.close()
        if explain:
            print(f"velesdb-memory: the daemon at {endpoint.url()} serves another store ({theirs}), "
                  f"not {ours}: not attaching", file=sys.stderr, flush=True)
        return None
    if conn.sock is not None:
        conn.sock.settimeout(READ_TIMEOUT_S)  # from now on it carries tool calls
    conn.timeout = READ_TIMEOUT_S
    return Found(endpoint, conn, float(settings.attach_reconnect_seconds), str(ca))

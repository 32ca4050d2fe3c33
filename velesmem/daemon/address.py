"""The daemon's address: loopback-only bind policy, and the URLs clients use to reach it."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, replace

from velesmem.config import ENV_PREFIX, Settings
from velesmem.errors import Internal

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
CA_CERT_FILE = "ca-cert.pem"  # the local CA in the TLS dir (velesmem.daemon.tls writes it)
STORE_HEADER = "x-velesdb-memory-store"  # /health names its resolved store: stdio attaches only to its own
WILDCARD_V4 = ("0.0.0.0", "", "*")
WILDCARD_V6 = "::"


@dataclass(frozen=True)
class DaemonAddress:
    """Where the daemon binds, and how a local client reaches it."""

    bind_host: str
    port: int
    scheme: str  # "https", or "http" with --http-insecure

    @property
    def connect_host(self) -> str:
        """A host a local client can dial: loopback when bound to a wildcard."""
        if self.bind_host in WILDCARD_V4:
            return "127.0.0.1"
        if self.bind_host == WILDCARD_V6:
            return "::1"
        return self.bind_host

    def served_names(self) -> list[str]:
        """The names and addresses other machines reach this daemon by, beyond loopback: the
        bind address itself, or for a wildcard bind this machine's host names and the
        addresses they resolve to. The leaf certificate and the Host check carry them."""
        if is_loopback(self.bind_host):
            return []
        if self.bind_host not in (*WILDCARD_V4, WILDCARD_V6):
            return [self.bind_host.strip("[]")]
        names = [socket.gethostname(), socket.getfqdn()]
        try:
            names += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
        except OSError:  # a host name that does not resolve: the names alone
            pass
        return list(dict.fromkeys(n.lower() for n in names if n and not is_loopback(n)))

    def bound_to(self, port: int) -> DaemonAddress:
        """This address with the port the socket actually got (differs only when 0 was asked)."""
        return self if port == self.port else replace(self, port=port)

    def url(self, path: str = MCP_PATH) -> str:
        host = self.connect_host
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port}{path}"


def is_loopback(host: str) -> bool:
    """True for localhost and any loopback IP literal."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def daemon_address(settings: Settings) -> DaemonAddress:
    """The configured address (parsing VELESDB_MEMORY_HTTP_BIND; bad values raise Internal). Port 0
    stands for a free port the system picks when the daemon binds (``bound_to`` then names it)."""
    port = settings.http_port
    if not 0 <= port < 65536:
        raise Internal(f"{ENV_PREFIX}HTTP_BIND / --http-port: port {port} is out of range 0-65535")
    return DaemonAddress(settings.http_host, port, "http" if settings.http_insecure else "https")


def check_bind_allowed(settings: Settings) -> DaemonAddress:
    """Refuse a non-loopback bind unless VELESDB_MEMORY_HTTP_ALLOW_REMOTE is set (the daemon
    then also requires a bearer token or a declared proxy: ``velesmem.daemon.auth``)."""
    address = daemon_address(settings)
    if not is_loopback(address.bind_host) and not settings.http_allow_remote:
        raise Internal(
            f"refusing to bind {address.bind_host}:{address.port}: the daemon listens on loopback "
            f"(127.0.0.1, ::1, localhost) unless told otherwise. Set "
            f"{ENV_PREFIX}HTTP_BIND=127.0.0.1:{address.port}, or, to serve other machines, "
            f"{ENV_PREFIX}HTTP_ALLOW_REMOTE=1 with a bearer token (velesdb-memory token create; "
            f"docs/auth.md) or behind an authenticating reverse proxy ({ENV_PREFIX}HTTP_AUTH=proxy)"
        )
    return address

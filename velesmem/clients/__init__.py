"""Client wiring: per-OS config paths, the entry each client needs, non-destructive merges."""

from velesmem.clients.catalog import CLIENTS, SERVER_NAME
from velesmem.clients.host import Host
from velesmem.clients.outcome import Outcome
from velesmem.clients.wiring import WireRequest, wire_clients, wired_urls

__all__ = ["CLIENTS", "SERVER_NAME", "Host", "Outcome", "WireRequest", "wire_clients", "wired_urls"]

"""The MCP sessions and clients the Status page lists, as the daemon's session ledger knows them.

The daemon hands the dashboard a ``ClientSessions`` callable (``velesmem.daemon.app``); without a
daemon (the app built alone, in tests) the list is empty. Only what the ledger holds is shown: a
session's id (shortened), the client its initialize named (``clientInfo``), the client's address
and User-Agent, its request count, GET streams and idle time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ClientSession:
    """One live MCP session."""

    id: str  # the first characters of the Mcp-Session-Id (enough to tell them apart)
    client: str  # the clientInfo its initialize sent: name and version
    address: str  # host:port of the client's connection
    user_agent: str
    requests: int  # made after the one that opened it
    streams: int  # GET streams it holds open
    idle_s: float | None  # seconds since its last request (None: unknown)


ClientSessions = Callable[[], list[ClientSession]]


def no_sessions() -> list[ClientSession]:
    """What an app without a daemon lists."""
    return []

"""Who is calling: the name of the bearer token that authenticated the current request.

The daemon's auth guard (``velesmem.daemon.auth``) puts the SDK's authenticated user on the
request; FastMCP's ``get_access_token()`` reads it back inside a tool. Writes record the name as
their author (``_veles_author``, docs/auth.md).
"""

from __future__ import annotations

from fastmcp.server.dependencies import get_access_token


def request_author() -> str | None:
    """The token's name (None over stdio, or from a loopback client that sent no token)."""
    access = get_access_token()
    return None if access is None else access.client_id

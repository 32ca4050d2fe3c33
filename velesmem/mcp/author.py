"""Who is calling: the name of the bearer token that authenticated the current request.

The daemon's auth guard (``velesmem.daemon.auth``) puts the SDK's ``AuthenticatedUser`` on the
request scope; the ``tools/call`` handler reads it from the request the SDK hands it and binds it
for the call, and a tool reads it back with :func:`request_author`. Writes record the name as their
author (``_veles_author``, docs/auth.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

_AUTHOR: ContextVar[str | None] = ContextVar("velesmem_author", default=None)


def author_of(request: Any) -> str | None:
    """The token name on an HTTP request's scope (None over stdio or without a token)."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


@contextmanager
def calling_as(author: str | None) -> Iterator[None]:
    """Bind ``author`` as the current call's author for the duration of the block."""
    token = _AUTHOR.set(author)
    try:
        yield
    finally:
        _AUTHOR.reset(token)


def request_author() -> str | None:
    """The token's name (None over stdio, or from a loopback client that sent no token)."""
    return _AUTHOR.get()

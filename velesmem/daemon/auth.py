"""Who may call ``/mcp``: the policy settled at start, and the guard enforcing it before any MCP
handling (docs/auth.md).

``VELESDB_MEMORY_HTTP_AUTH``:

- ``auto`` (default): a loopback daemon serves without a token, as it always has; a token that
  is sent is checked all the same (a wrong one is refused, a good one names the author). A
  daemon bound beyond loopback requires a token on every request.
- ``token``: every request needs a valid token, loopback included.
- ``proxy``: an authenticating reverse proxy in front is declared; no token is checked.

A daemon that requires tokens refuses to start while the store holds no live token.

Why a guard of our own rather than ``http_app(auth=...)``: FastMCP puts its check inside its own
app, behind our session cap and body gate, so an unauthenticated client could evict idle
sessions and hold the body budget before being refused; and its 401 tells clients to redo an
OAuth registration we do not offer. The guard reuses the SDK's pieces instead: the verifier
implements the SDK's ``TokenVerifier`` protocol, and the SDK's ``BearerAuthBackend`` reads the
header and builds the ``AuthenticatedUser`` that the SDK binds each session to (a session opened
with one token is refused to another name's) and that ``velesmem.mcp.author`` reads. (FastMCP's
verifier would import all of FastMCP, ~0.3 s of CPU, on the daemon's start path.)
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from velesmem.config import ENV_PREFIX, Settings
from velesmem.daemon.address import MCP_PATH, DaemonAddress, is_loopback
from velesmem.daemon.guards import plain_refusal
from velesmem.daemon.tokens import digests_match, looks_like_token, token_digest
from velesmem.errors import Internal, VelesmemError
from velesmem.store import TokenStore

log = logging.getLogger("velesmem.auth")
REALM = "velesdb-memory"
REFUSAL_LOG_EVERY_S = 60.0  # refusals are counted, and logged at most this often
_FIX = ("create one with `velesdb-memory token create --name NAME` on the daemon's machine, "
        "then `velesdb-memory wire --token TOKEN` where the client runs")


@dataclass(frozen=True)
class AuthPolicy:
    """How the daemon treats ``/mcp`` requests: ``checks`` a token when one is sent, and
    ``required`` one on every request."""

    mode: str
    checks: bool
    required: bool

    def describe(self) -> str:
        if not self.checks:
            return (f"authentication: left to the reverse proxy in front ({ENV_PREFIX}HTTP_AUTH="
                    "proxy); no token is checked")
        if self.required:
            return "authentication: a bearer token is required on every request"
        return ("authentication: loopback clients need no token; a token that is sent is checked "
                "and names the author of its writes")


def auth_policy(settings: Settings, address: DaemonAddress, tokens: TokenStore) -> AuthPolicy:
    """The policy for this daemon; Internal (refusing to start) when it requires tokens and the
    store holds no live one."""
    mode = settings.http_auth
    if mode == "proxy":
        return AuthPolicy(mode, checks=False, required=False)
    remote = not is_loopback(address.bind_host)
    required = mode == "token" or remote
    if required and not any(t.live for t in tokens.tokens()):
        if remote:
            why = (f"it would listen on {address.bind_host}, beyond loopback, where every request "
                   "must carry a bearer token")
            alt = (f"; or, only behind an authenticating reverse proxy, set {ENV_PREFIX}HTTP_AUTH"
                   "=proxy")
        else:
            why = f"{ENV_PREFIX}HTTP_AUTH=token requires a bearer token on every request"
            alt = ""
        raise Internal(f"refusing to start: {why}, and the store has no live token. To fix it, "
                       f"{_FIX}{alt}")
    return AuthPolicy(mode, checks=True, required=required)


class StoreTokenVerifier:
    """The SDK's ``TokenVerifier``: accepts the live tokens of the store, looked up by SHA-256 on
    every request (so a token revoked from the command line is refused from the next request),
    compared in constant time. The access token it returns names the token (``client_id``) and
    never carries the secret."""

    def __init__(self, tokens: TokenStore) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        if not looks_like_token(token):
            return None
        digest = token_digest(token)
        record = await anyio.to_thread.run_sync(self._tokens.find_token_by_hash, digest)
        if record is None or not record.live or not digests_match(record.digest, digest):
            return None
        return AccessToken(token=f"velesmem-token:{record.name}", client_id=record.name,
                           scopes=[])


class AuthGuard:
    """401 with ``WWW-Authenticate: Bearer`` for a ``/mcp`` request without a valid token (when
    the policy requires one) or with a wrong, unknown or revoked one; otherwise the request goes
    on carrying the authenticated user. ``/health`` is not guarded."""

    def __init__(self, app: ASGIApp, *, policy: AuthPolicy, verifier: TokenVerifier) -> None:
        self.app = app
        self.policy = policy
        self.backend = BearerAuthBackend(verifier)
        self._refused = 0
        self._logged_at = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.policy.checks or not _guarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        header = conn.headers.get("authorization")
        if header is None or not header.lower().startswith("bearer "):
            if self.policy.required:
                await self._refuse(send, None, "a bearer token is required: send "
                                   f"'Authorization: Bearer <token>'; {_FIX}", conn)
                return
            await self.app(scope, receive, send)
            return
        try:
            result = await self.backend.authenticate(conn)
        except VelesmemError as exc:
            log.error("could not check a bearer token: %s", exc.message)
            await plain_refusal(send, 503, "Service Unavailable: the daemon cannot check tokens "
                                "right now; retry shortly")
            return
        if result is None:
            await self._refuse(send, "invalid_token", "the bearer token is unknown or revoked: "
                               "ask the daemon's owner for a new one (velesdb-memory token "
                               "create) and re-wire the client with it", conn)
            return
        scope["auth"], scope["user"] = result
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, error: str | None, description: str,
                      conn: HTTPConnection) -> None:
        self._note_refusal(error, conn)
        challenge = f'Bearer realm="{REALM}"'
        body: dict[str, str] = {"error": error or "unauthorized", "error_description": description}
        if error is not None:
            challenge += f', error="{error}", error_description="{_quotable(description)}"'
        payload = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"www-authenticate", challenge.encode()),
        ]})
        await send({"type": "http.response.body", "body": payload})

    def _note_refusal(self, error: str | None, conn: HTTPConnection) -> None:
        """Count refusals; log one line (never the token) at most every REFUSAL_LOG_EVERY_S."""
        self._refused += 1
        now = time.monotonic()
        if now - self._logged_at < REFUSAL_LOG_EVERY_S and self._logged_at:
            return
        peer = conn.client.host if conn.client else "?"
        what = "no bearer token" if error is None else "an unknown or revoked bearer token"
        log.warning("refused %d request(s) with 401 so far; the latest from %s carried %s",
                    self._refused, peer, what)
        self._logged_at = now


def _guarded(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


def _quotable(text: str) -> str:
    """``text`` safe inside a quoted-string of a header (RFC 7230): no quotes or backslashes."""
    return text.replace("\\", "").replace('"', "'")

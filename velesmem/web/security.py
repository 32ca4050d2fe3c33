"""The dashboard's security model, in one place (docs/dashboard.md):

- **Headers on every answer**: a strict Content-Security-Policy (scripts, styles and images from
  this origin only, no inline script, no framing, forms post here only), ``nosniff``, no
  referrer to other origins, and ``no-store`` for pages.
- **Who may look**: exactly as ``/mcp`` decides (``velesmem.daemon.auth``). When the daemon
  requires a token (beyond loopback, or ``HTTP_AUTH=token``) every page but the login form and
  the static files needs a session: the login form takes a bearer token, checks it with the
  daemon's verifier, and sets an HttpOnly, Secure, SameSite=Strict cookie naming a random
  session held in memory; the token is re-checked on each request, so revoking it ends the
  session. On loopback with ``auto`` (or ``proxy``) pages open directly.
- **Nothing changes without a form from here**: every state-changing request is a POST carrying
  the CSRF token (double-submit: a SameSite=Strict cookie and a hidden field, compared in
  constant time) and an ``Origin`` equal to this page's own; any other is refused with 403
  before its handler runs. GET handlers only read.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import quote

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem import limits

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    # same-origin, not no-referrer: under no-referrer Chromium sends ``Origin: null`` with a
    # form POST, which the same-origin check must refuse
    ("referrer-policy", "same-origin"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)
CSRF_FIELD = "csrf"
LOGIN_PATH = "/login"
STATIC_PREFIX = "/static/"
OPEN_PATHS = (LOGIN_PATH,)  # reachable without a session (the static files too)

# Token name (the verifier's answer for a good token) or None.
Verify = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class CookieNames:
    """``__Host-`` names over HTTPS (the browser then insists on Secure, Path=/ and no
    Domain); plain names over ``--http-insecure``."""

    session: str
    csrf: str
    secure: bool

    @classmethod
    def for_scheme(cls, scheme: str) -> CookieNames:
        if scheme == "https":
            return cls("__Host-velesmem-session", "__Host-velesmem-csrf", True)
        return cls("velesmem-session", "velesmem-csrf", False)


def cookie_header(name: str, value: str, *, secure: bool, max_age: int | None = None) -> str:
    """A Set-Cookie value: HttpOnly, SameSite=Strict, Path=/, Secure over HTTPS."""
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)


def read_cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header: as if none was sent  # noqa: BLE001
        return {}
    return {k: m.value for k, m in jar.items()}


class Sessions:
    """Login sessions in memory: random id → (token, expiry), at most
    ``MAX_DASHBOARD_SESSIONS`` (the oldest dropped first). A restart logs everyone out."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def open(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        self._held[sid] = (token, self._clock() + limits.DASHBOARD_SESSION_SECONDS)
        while len(self._held) > limits.MAX_DASHBOARD_SESSIONS:
            self._held.popitem(last=False)
        return sid

    def token(self, sid: str | None) -> str | None:
        """The token a live session was opened with, else None (an expired one is dropped)."""
        if not sid or sid not in self._held:
            return None
        token, expires = self._held[sid]
        if self._clock() >= expires:
            del self._held[sid]
            return None
        return token

    def close(self, sid: str | None) -> None:
        if sid:
            self._held.pop(sid, None)


@dataclass
class Access:
    """Whether pages need a login (``required``) and how a token is checked (``verify``)."""

    required: bool
    verify: Verify
    sessions: Sessions


def csrf_token(request: Request) -> str:
    """This request's CSRF token (the guard put it on the scope: the cookie's, or a new one)."""
    token = request.scope.get("velesmem.csrf")
    return token if isinstance(token, str) else ""


def viewer(request: Request) -> str | None:
    """The name of the token the session was opened with (None: no login needed or made)."""
    name = request.scope.get("velesmem.viewer")
    return name if isinstance(name, str) else None


def same_origin(request: Request) -> bool:
    """Whether the request's ``Origin`` is this page's own origin (scheme and Host; the daemon's
    Host guard has already refused a foreign Host). An absent Origin fails: browsers send one
    with every POST."""
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    if not origin or not host:
        return False
    return origin.strip().lower().rstrip("/") == f"{request.url.scheme}://{host}".lower()


def csrf_matches(request: Request, sent: str | None) -> bool:
    expected = csrf_token(request)
    return bool(expected) and isinstance(sent, str) and hmac.compare_digest(
        expected.encode(), sent.encode())


class WebGuard:
    """ASGI middleware in front of every dashboard route: the security headers, the CSRF
    cookie, and the login check (a page without a session redirects to the login form, any
    other request gets 401)."""

    def __init__(self, app: ASGIApp, *, access: Access, cookies: CookieNames) -> None:
        self.app = app
        self.access = access
        self.cookies = cookies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        jar = read_cookies(headers)
        csrf = jar.get(self.cookies.csrf, "")
        new_csrf = len(csrf) < 32 or len(csrf) > 128 or not csrf.replace("-", "").replace(
            "_", "").isalnum()
        if new_csrf:
            csrf = secrets.token_urlsafe(32)
        scope["velesmem.csrf"] = csrf
        path: str = scope["path"]
        static = path.startswith(STATIC_PREFIX)

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS:
                    out[name] = value
                if not static:
                    out["cache-control"] = "no-store"
                if new_csrf and not static:
                    out.append("set-cookie", cookie_header(self.cookies.csrf, csrf,
                                                           secure=self.cookies.secure))
            await send(message)

        if self.access.required and not static and path not in OPEN_PATHS:
            sid = jar.get(self.cookies.session)
            token = self.access.sessions.token(sid)
            name = None if token is None else await self.access.verify(token)
            if name is None:
                self.access.sessions.close(sid)
                await self._refuse(scope, send_secured)
                return
            scope["velesmem.viewer"] = name
        await self.app(scope, receive, send_secured)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        """A page asked for without a session: GET goes to the login form, others get 401."""
        if scope["method"] in ("GET", "HEAD"):
            target = scope["path"] + (("?" + scope["query_string"].decode("latin-1"))
                                      if scope.get("query_string") else "")
            location = f"{LOGIN_PATH}?next={quote(target, safe='')}"
            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", location.encode("latin-1")),
                                    (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b"Unauthorized: log in to the dashboard first\n"
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def safe_next(target: str | None) -> str:
    """A post-login redirect target: a path on this origin only (never ``//host`` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target

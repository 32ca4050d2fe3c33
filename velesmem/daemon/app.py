"""The daemon's ASGI app: ``GET /health``, the streamable-HTTP MCP endpoint at ``/mcp`` and the
dashboard (``velesmem.web``) at every other path, behind
the guards (outermost first): Host/Origin, bearer-token auth, drain, session cap, body gate,
duplicate request ids.

The MCP SDK's streamable-HTTP app (``velesmem.mcp.server.http_app``) is mounted at ``/`` (mounting at ``/mcp`` would redirect to ``/mcp/``), inside the
``SessionLedger`` that tells the guards which sessions are live and ends them through the SDK's
public request path (``ledger.py``). Its lifespan is wrapped: the SDK session manager only exists
inside it, and the session and body caps are public attributes of that manager, set there.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from velesmem import limits
from velesmem.daemon.address import HEALTH_PATH, MCP_PATH, STORE_HEADER, DaemonAddress
from velesmem.daemon.auth import AuthGuard, AuthPolicy, StoreTokenVerifier
from velesmem.daemon.bodies import BodyBudget, BodyGate
from velesmem.daemon.guards import DrainGate, DrainState, HostOriginGuard, allowed_authorities, allowed_origins
from velesmem.daemon.ledger import SessionLedger
from velesmem.daemon.request_ids import DuplicateIdGuard
from velesmem.daemon.sessions import SessionActivity, SessionCap
from velesmem.mcp.server import McpServer, http_app
from velesmem.runtime import Runtime
from velesmem.web import WebAccess, build_web
from velesmem.web.sessions import ClientSession

# How the SDK serves /mcp. A POST is answered with one JSON body, not an SSE stream: no tool sends
# progress or log notifications mid-call, and an SSE answer costs a task group, a memory stream
# and a sibling task per request (about 0.3 ms of CPU a call here, a fifth of a small call's
# cost). GET streams (server-to-client messages of 2025-era sessions) are unchanged.
HTTP_APP_OPTIONS: dict[str, Any] = {"json_response": True}
SESSION_ID_SHOWN = 12  # characters of a session id the Status page shows


@dataclass
class McpHandle:
    """Live handles on the MCP endpoint, for the guards and for shutdown."""

    sessions: SessionLedger
    runtime: Runtime
    drain: DrainState = field(default_factory=DrainState)
    activity: SessionActivity = field(default_factory=SessionActivity)

    def live_sessions(self) -> Mapping[str, Any]:
        """Session id → what opened it, for the sessions live on the endpoint."""
        return self.sessions.live_sessions()

    def session_count(self) -> int:
        return len(self.live_sessions())

    async def evict(self, session_id: str) -> None:
        """End one session now: its id answers 404 at once and its slot is free."""
        await self.sessions.end(session_id)

    async def end_idle_sessions(self) -> int:
        """End every session with no call in flight now (their GET streams end with them), so a
        shutdown waits only for calls; the number ended."""
        idle = self.activity.idle(list(self.live_sessions()))
        for session_id in idle:
            await self.evict(session_id)
        return len(idle)

    async def terminate_sessions(self) -> None:
        """End every session (closes idle GET streams so shutdown need not wait)."""
        await self.sessions.end_all()

    def client_sessions(self) -> list[ClientSession]:
        """The live sessions as the dashboard's Status page lists them, most recently active
        first (at most ``STATUS_SESSIONS_SHOWN``): who opened each, what it has done since."""
        now = time.monotonic()
        out = []
        for session_id, scope in list(self.live_sessions().items()):
            record = self.activity.sessions.get(session_id)
            client = scope.get("client")
            out.append(ClientSession(
                session_id[:SESSION_ID_SHOWN], self.sessions.client_of(session_id),
                f"{client[0]}:{client[1]}" if client else "",
                Headers(scope=scope).get("user-agent", ""),
                record.requests if record else 0, record.streams if record else 0,
                max(now - record.last_active, 0.0) if record else None))
        out.sort(key=lambda s: (s.idle_s is None, s.idle_s or 0.0))
        return out[:limits.STATUS_SESSIONS_SHOWN]


def _health_endpoint(runtime: Runtime, port: int) -> Callable[[Request], Awaitable[JSONResponse]]:
    """``/health``: the Runtime's state as JSON, with the port served (the one picked for
    ``--http-port 0``); 200 while warming or ready, 503 while starting or draining (probes that
    read only the status code keep working)."""
    headers = {STORE_HEADER: runtime.store.location}

    async def health(_request: Request) -> JSONResponse:
        body = runtime.health() | {"port": port}
        status = 200 if body["status"] == "ok" else 503
        return JSONResponse(body, status_code=status, headers=headers)

    return health


class PathSplit:
    """``/mcp`` (and below) to the MCP app, every other path to the dashboard: one string test
    per request, so the dashboard adds nothing to an MCP call's path."""

    def __init__(self, mcp: ASGIApp, web: ASGIApp) -> None:
        self.mcp = mcp
        self.web = web

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            await self.mcp(scope, receive, send)
        else:
            await self.web(scope, receive, send)


def web_access(auth: AuthPolicy, verifier: StoreTokenVerifier) -> WebAccess:
    """The dashboard's access, exactly as /mcp's: a login when the policy requires a token."""

    async def verify(token: str) -> str | None:
        found = await verifier.verify_token(token)
        return None if found is None else found.client_id

    return WebAccess(required=auth.checks and auth.required, verify=verify)


class McpEndpoint(Protocol):
    """The ``/mcp`` endpoint of the MCP app: its SDK session manager exists inside the lifespan."""

    session_manager: StreamableHTTPSessionManager | None


def _find_endpoint(mcp_app: Starlette) -> McpEndpoint:
    """The endpoint routed at ``/mcp`` in the MCP app."""
    for route in mcp_app.routes:
        if isinstance(route, Route) and route.path == MCP_PATH and hasattr(route.endpoint, "session_manager"):
            endpoint: McpEndpoint = route.endpoint
            return endpoint
    raise RuntimeError(f"the MCP app has no {MCP_PATH} route")


def build_app(
    server: McpServer, runtime: Runtime, address: DaemonAddress, *, idle_timeout_s: float,
    body_queue_s: float = float(limits.HTTP_BODY_QUEUE_SECONDS), auth: AuthPolicy,
    session_admit_s: float = float(limits.HTTP_SESSION_ADMIT_WAIT_SECONDS),
) -> tuple[Starlette, McpHandle]:
    """The Starlette app serving ``/health``, ``/mcp`` and the dashboard with every guard on; its lifespan
    starts the Runtime. ``auth`` is the policy ``velesmem.daemon.auth.auth_policy`` settled."""
    settings = runtime.settings
    mcp_app = http_app(server, path=MCP_PATH, session_idle_timeout=idle_timeout_s, **HTTP_APP_OPTIONS)
    endpoint = _find_endpoint(mcp_app)
    handle = McpHandle(sessions=SessionLedger(mcp_app), runtime=runtime)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # warms in the background: the handshake and /health never wait for it, and a slow model
        # starts loading once the first call has run (Runtime.start)
        runtime.start(defer_warm=True)
        async with mcp_app.router.lifespan_context(app):
            manager = endpoint.session_manager
            if manager is None:
                raise RuntimeError("the MCP app's lifespan started no session manager")
            # SessionCap keeps the count at the cap by closing sessions; the SDK's own cap
            # stays as a backstop.
            manager.max_sessions = settings.http_max_sessions
            manager.max_request_body_size = settings.http_max_body_bytes
            # BodyGate enforces the body cap while streaming and hands over one copy; the SDK's
            # limit middleware would buffer two more, so the manager serves requests directly.
            if isinstance(manager.asgi_app, RequestBodyLimitMiddleware):
                # (a public attribute, typed by inference as the middleware it starts as)
                manager.asgi_app = manager.asgi_app.app  # type: ignore[assignment]
            yield

    verifier = StoreTokenVerifier(runtime.store)
    web = build_web(runtime, web_access(auth, verifier), address.scheme,
                    sessions=handle.client_sessions)
    authorities = allowed_authorities(address.port, address.served_names())
    middleware = [
        Middleware(HostOriginGuard, authorities=authorities,
                   origins=allowed_origins(authorities, address.scheme)),
        # Before anything that costs the daemon memory or a session slot.
        Middleware(AuthGuard, policy=auth, verifier=verifier),
        Middleware(DrainGate, state=handle.drain, path=MCP_PATH),
        Middleware(SessionCap, max_sessions=settings.http_max_sessions, directory=handle,
                   activity=handle.activity, admit_wait_s=session_admit_s),
        Middleware(BodyGate, max_bytes=settings.http_max_body_bytes,
                   budget=BodyBudget(settings.http_max_body_bytes_in_flight), queue_timeout_s=body_queue_s),
        Middleware(DuplicateIdGuard),
    ]
    routes = [
        Route(HEALTH_PATH, _health_endpoint(runtime, address.port), methods=["GET", "HEAD"]),
        Mount("/", app=PathSplit(handle.sessions, web)),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan), handle

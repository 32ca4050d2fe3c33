"""The dashboard's ASGI app: every page the registry discovers, the static files shipped in the
wheel, behind ``WebGuard`` (``security.py``). The daemon mounts it for every path but ``/mcp``
and ``/health`` (``velesmem.daemon.app``)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from velesmem.errors import VelesmemError
from velesmem.runtime import Runtime
from velesmem.web.context import WebContext
from velesmem.web.forms import read_form
from velesmem.web.registry import Page, WebRoute, discover
from velesmem.web.render import Renderer
from velesmem.web.sessions import ClientSessions, no_sessions
from velesmem.web.security import (
    CSRF_FIELD, Access, CookieNames, Sessions, Verify, WebGuard, csrf_matches, same_origin,
)


@dataclass(frozen=True)
class WebAccess:
    """What the daemon's auth policy decided, for the dashboard: whether a login is
    ``required`` (as for /mcp) and how a bearer token is checked (``verify`` → its name)."""

    required: bool
    verify: Verify


def _endpoint(web: WebContext, route: WebRoute) -> Route:
    if route.method == "GET":
        handler = route.handler
        assert handler is not None

        async def read(request: Request) -> Response:
            try:
                return await handler(web, request)
            except VelesmemError as exc:
                return web.renderer.error(request, exc)

        return Route(route.path, read, methods=["GET", "HEAD"])
    form_handler = route.form_handler
    assert form_handler is not None

    async def change(request: Request) -> Response:
        if not same_origin(request):
            return web.renderer.refusal(request, 403, "this form was not sent from this "
                                        "dashboard (missing or foreign Origin): nothing changed")
        try:
            form = await read_form(request)
            if not csrf_matches(request, form.get(CSRF_FIELD)):
                return web.renderer.refusal(request, 403, "the form's CSRF token is missing or "
                                            "stale: reload the page and retry; nothing changed")
            return await form_handler(web, request, form)
        except VelesmemError as exc:
            return web.renderer.error(request, exc)

    return Route(route.path, change, methods=["POST"])


def build_web(runtime: Runtime, access: WebAccess, scheme: str,
              pages: list[Page] | None = None,
              sessions: ClientSessions = no_sessions) -> Starlette:
    """The dashboard app over ``runtime`` (its lifespan is the daemon's: nothing starts here);
    ``sessions`` lists the live MCP sessions for the Status page."""
    pages = discover() if pages is None else pages
    nav = [(p.nav, p.link) for p in pages if p.nav is not None]
    guard_access = Access(required=access.required, verify=access.verify, sessions=Sessions())
    cookies = CookieNames.for_scheme(scheme)
    web = WebContext(runtime, Renderer(nav, login_required=access.required), guard_access,
                     cookies, sessions)
    routes: list[BaseRoute] = [_endpoint(web, r) for p in pages for r in p.routes]
    routes.append(Mount("/static", app=StaticFiles(packages=[("velesmem.web", "static")]),
                        name="static"))
    return Starlette(routes=routes, middleware=[
        Middleware(WebGuard, access=guard_access, cookies=cookies)])

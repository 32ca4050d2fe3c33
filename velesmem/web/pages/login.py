"""The login form, used only when the daemon requires a token (beyond loopback, or
``HTTP_AUTH=token``): a good bearer token opens a session cookie (``velesmem.web.security``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from velesmem import limits
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get, post
from velesmem.web.security import LOGIN_PATH, cookie_header, read_cookies, safe_next


async def show(web: WebContext, request: Request) -> Response:
    target = safe_next(request.query_params.get("next"))
    if not web.access.required:
        return RedirectResponse(target, status_code=303)
    return web.render(request, "login.html", title="Log in", next=target, failed=False)


async def log_in(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    target = safe_next(form.get("next"))
    if not web.access.required:
        return RedirectResponse(target, status_code=303)
    token = form.get("token", "").strip()
    name = await web.access.verify(token) if token else None
    if name is None:
        return web.render(request, "login.html", 401, title="Log in", next=target, failed=True)
    sid = web.access.sessions.open(token)
    answer = RedirectResponse(target, status_code=303)
    answer.headers.append("set-cookie", cookie_header(
        web.cookies.session, sid, secure=web.cookies.secure,
        max_age=limits.DASHBOARD_SESSION_SECONDS))
    return answer


async def log_out(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    web.access.sessions.close(read_cookies(request.headers).get(web.cookies.session))
    answer = RedirectResponse(LOGIN_PATH if web.access.required else "/", status_code=303)
    answer.headers.append("set-cookie", cookie_header(web.cookies.session, "",
                                                      secure=web.cookies.secure, max_age=0))
    return answer


PAGE = Page("login", routes=(get(LOGIN_PATH, show), post(LOGIN_PATH, log_in),
                             post("/logout", log_out)), order=900)

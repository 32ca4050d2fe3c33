"""Templates to HTML: a Jinja environment that escapes every value in every template (memories
are untrusted text written by agents), the navigation bar from the page registry, the CSRF
field, and the one place where a domain error becomes an error page."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from velesmem.errors import Category, VelesmemError
from velesmem.web.security import CSRF_FIELD, csrf_token, viewer

STATUS_OF = {Category.INVALID_INPUT: 400, Category.NOT_FOUND: 404}
TEXT_PREVIEW_CHARS = 240


def when(epoch: float | None) -> str:
    """Epoch seconds as ``YYYY-MM-DD HH:MM:SS UTC`` ('' for none)."""
    if not epoch:
        return ""
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def preview(text: str, chars: int = TEXT_PREVIEW_CHARS) -> str:
    """The start of ``text`` on one line (escaped by the template like any value)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[:chars - 1] + "…"


def as_json(value: Any) -> str:
    """A metadata value as JSON text (escaped by the template like any value)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class Renderer:
    """Renders the dashboard's templates with what every page needs."""

    def __init__(self, nav: Sequence[tuple[str, str]], login_required: bool) -> None:
        self.env = Environment(loader=PackageLoader("velesmem.web", "templates"),
                               autoescape=True, undefined=StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(when=when, preview=preview, as_json=as_json)
        self.nav = list(nav)
        self.login_required = login_required

    def page(self, request: Request, template: str, status: int = 200,
             **values: Any) -> HTMLResponse:
        token = csrf_token(request)

        def csrf_field() -> Markup:
            return Markup('<input type="hidden" name="{}" value="{}">').format(
                CSRF_FIELD, escape(token))

        html = self.env.get_template(template).render(
            nav=self.nav, path=request.url.path, csrf_field=csrf_field,
            viewer=viewer(request), login_required=self.login_required, **values)
        return HTMLResponse(html, status_code=status)

    def error(self, request: Request, exc: VelesmemError) -> HTMLResponse:
        """The error page for a domain error: 400 bad input, 404 not found, else 500."""
        status = STATUS_OF.get(exc.category, 500)
        return self.page(request, "error.html", status, title="Error", code=status,
                         message=exc.message)

    def refusal(self, request: Request, status: int, message: str) -> HTMLResponse:
        return self.page(request, "error.html", status, title="Refused", code=status,
                         message=message)

"""How a dashboard page is declared.

To add a page: write one module in ``velesmem/web/pages/`` that defines ``PAGE = Page(...)``
with its routes, and one template in ``velesmem/web/templates/`` that extends ``base.html``.
Nothing else changes: ``discover()`` imports every module of that package, and a page with a
``nav`` label appears in the navigation bar (ordered by ``order``). For example::

    async def show(web: WebContext, request: Request) -> Response:
        result = await web.read(web.runtime.memory.memory_status)
        return web.render(request, "status.html", title="Status", status=result)

    PAGE = Page("status", routes=(get("/status", show),), nav="Status", order=40)

GET handlers only read. A state-changing action is declared with ``post(path, handler)``: its
handler receives the form fields after the same-origin and CSRF checks (``velesmem.web.security``)
passed; it answers with a redirect (303) to a page. Templates put ``{{ csrf_field() }}`` in every
form. Domain errors raised by a handler become the error page (400 for InvalidInput, 404 for
NotFound), in ``render.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from velesmem.web.context import WebContext

Handler = Callable[["WebContext", Request], Awaitable[Response]]
FormHandler = Callable[["WebContext", Request, dict[str, str]], Awaitable[Response]]


@dataclass(frozen=True)
class WebRoute:
    """One path and method of a page: a GET ``handler`` or a POST ``form_handler``."""

    path: str
    method: str
    handler: Handler | None = None
    form_handler: FormHandler | None = None


def get(path: str, handler: Handler) -> WebRoute:
    """A read-only page at ``path`` (Starlette path syntax, e.g. ``/fact/{id}``)."""
    return WebRoute(path, "GET", handler=handler)


def post(path: str, handler: FormHandler) -> WebRoute:
    """A state-changing action at ``path``: called only after the Origin and CSRF checks."""
    return WebRoute(path, "POST", form_handler=handler)


@dataclass(frozen=True)
class Page:
    """A page of the dashboard: a name, its routes, and its label in the navigation bar
    (``nav``; None keeps it out of the bar, e.g. a fact's page, reached by links)."""

    name: str
    routes: tuple[WebRoute, ...]
    nav: str | None = None
    nav_path: str | None = None  # where the bar links to (default: the first route's path)
    order: int = 100

    @property
    def link(self) -> str:
        return self.nav_path or self.routes[0].path


def discover() -> list[Page]:
    """Every ``PAGE`` of the modules in ``velesmem.web.pages``, in ``order`` then name."""
    from velesmem.web import pages

    found = []
    for info in sorted(pkgutil.iter_modules(pages.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{pages.__name__}.{info.name}")
        page = getattr(module, "PAGE", None)
        if isinstance(page, Page):
            found.append(page)
    return sorted(found, key=lambda p: (p.order, p.name))

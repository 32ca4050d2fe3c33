"""What a dashboard handler is given: the Runtime's services behind a small concurrency cap,
the template renderer, and the security settings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import HTMLResponse

from velesmem import limits
from velesmem.runtime import Runtime
from velesmem.web.render import Renderer
from velesmem.web.security import Access, CookieNames
from velesmem.web.sessions import ClientSessions, no_sessions

T = TypeVar("T")


@dataclass
class WebContext:
    """Shared by every dashboard request. Store work goes through ``read``/``write``: the
    Runtime's worker pool (as the MCP tools), at most ``DASHBOARD_CONCURRENT_REQUESTS`` at once,
    so a refreshing dashboard never queues ahead of /mcp."""

    runtime: Runtime
    renderer: Renderer
    access: Access
    cookies: CookieNames
    sessions: ClientSessions = no_sessions  # the live MCP sessions (the daemon's ledger)
    gate: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(limits.DASHBOARD_CONCURRENT_REQUESTS))

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the Runtime's worker pool (a service read)."""
        async with self.gate:
            return await self.runtime.run(fn, *args, **kwargs)

    async def write(self, submit: Callable[..., Future[T]], *args: Any, **kwargs: Any) -> T:
        """A service write (``submit_*``), awaited until it commits, as the MCP tools do."""
        async with self.gate:
            return await self.runtime.write(submit, *args, **kwargs)

    def render(self, request: Request, template: str, status: int = 200,
               **values: Any) -> HTMLResponse:
        return self.renderer.page(request, template, status, **values)

"""The dashboard: server-rendered pages over the same services the MCP tools call, served by the
daemon at ``/`` (docs/dashboard.md).

- ``app.py`` builds the ASGI app the daemon mounts (routes of every page, static files, guard);
- ``security.py`` is the whole security model: headers (strict CSP), login sessions, CSRF and
  the same-origin check of every POST;
- ``registry.py`` is how a page is declared (one module in ``pages/`` + one template);
- ``render.py`` renders templates (autoescaped) and domain errors as pages;
- ``forms.py`` reads a POST's form body, bounded.
"""

from __future__ import annotations

from velesmem.web.app import WebAccess, build_web

__all__ = ["WebAccess", "build_web"]

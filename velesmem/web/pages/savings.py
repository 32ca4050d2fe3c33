"""The Savings page (``/savings``): what the context compiler saved, over time — the events
``context_savings`` aggregates (the same service call, optionally for one project), summed per
day and drawn as a bar chart on the server (``velesmem.web.plot``), with the same figures as a
table. At most ``MAX_SAVINGS_EVENTS`` events are read, as by the tool."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from velesmem.web import plot
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get

TABLE_ROWS = 60  # the most recent days listed under the chart


async def show(web: WebContext, request: Request) -> Response:
    project = request.query_params.get("project", "").strip() or None
    context = web.runtime.context

    def read() -> tuple[dict[str, Any], dict[str, Any]]:
        return context.savings(project), context.savings_series(project)

    totals, series = await web.read(read)
    points = series["points"]
    chart = plot.bars([plot.Point(p["start"], p["tokens_saved"]) for p in points],
                      "tokens saved per day" + (f" in project {project}" if project else ""))
    recent = list(reversed(points[-TABLE_ROWS:]))
    return web.render(request, "savings.html", title="Savings", project=project or "",
                      totals=totals, chart=chart, recent=recent, days=len(points),
                      truncated=series["truncated"])


PAGE = Page("savings", routes=(get("/savings", show),), nav="Savings", order=60)

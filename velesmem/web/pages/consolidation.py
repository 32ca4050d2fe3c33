"""The Consolidation page (``/consolidation``): preview a run (archives and confidence decays),
apply it, undo a past one, and read each run's report — through ``ConsolidationService``, the code behind ``velesdb-memory
consolidate``. A preview reads the whole store (like the command), so it runs only when asked
for; applying re-plans and applies only if the plan is still the one shown (its fingerprint),
else the new plan is shown instead. Apply and undo are POST forms (CSRF and Origin checked by
the registry); every GET only reads."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from velesmem import limits
from velesmem.consolidate import RunReport
from velesmem.errors import InvalidInput
from velesmem.ids import to_u64
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get, post

DONE = {"applied": "The run was applied.", "undone": "The run was undone.",
        "nothing": "There was nothing to archive: no run was journaled.",
        "changed": "The store changed since that preview was shown: here is the plan now. "
                   "Nothing was applied."}


def days_of(raw: str | None, default: float, what: str = "archive-after days") -> float:
    """An age in days from a form or query value (the setting when empty)."""
    if raw is None or raw.strip() == "":
        return default
    try:
        days = float(raw)
    except ValueError:
        raise InvalidInput(f"{what} must be a number, got {raw[:40]!r}") from None
    if not 0 <= days <= limits.MAX_ARCHIVE_AFTER_DAYS_FORM:
        raise InvalidInput(f"{what} must be between 0 and "
                           f"{limits.MAX_ARCHIVE_AFTER_DAYS_FORM:g}, got {raw[:40]!r}")
    return days


def ages(web: WebContext, values: Mapping[str, str]) -> tuple[float, float]:
    """(archive-after days, decay-after days) from a query or form, the settings by default
    (as ``velesdb-memory consolidate`` takes them)."""
    settings = web.runtime.settings
    return (days_of(values.get("days"), settings.archive_after_days),
            days_of(values.get("decay"), settings.decay_after_days, "decay-after days"))


def rows(report: RunReport, shown: int = limits.CONSOLIDATION_REPORT_SHOWN
         ) -> list[dict[str, str]]:
    """The first ``shown`` changes of a report, as the template lists them."""
    return [{"id": str(to_u64(c.src)), "into": str(to_u64(c.dst)), "reason": c.reason,
             "fact": report.texts.get(c.src, ""), "kept": report.texts.get(c.dst, "")}
            for c in report.changes[:shown]]


def decay_rows(report: RunReport, shown: int = limits.CONSOLIDATION_REPORT_SHOWN
               ) -> list[dict[str, str]]:
    """The first ``shown`` confidence decays of a report, as the template lists them."""
    return [{"id": str(to_u64(d.key)), "delta": f"{d.delta:+.2f}",
             "fact": report.texts.get(d.key, "")} for d in report.decays[:shown]]


async def show(web: WebContext, request: Request) -> Response:
    q = request.query_params
    service = web.runtime.consolidation
    days, decay = ages(web, q)
    preview = None
    if q.get("preview") or q.get("done") == "changed":
        preview = await web.read(service.preview, days, decay)
    run = q.get("run", "").strip()
    report = await web.read(service.report, run) if run else None
    history = await web.read(service.history)
    return web.render(request, "consolidation.html", title="Consolidation", days=days,
                      decay=decay, preview=preview,
                      preview_rows=rows(preview) if preview else [],
                      preview_decays=decay_rows(preview) if preview else [],
                      report=report, report_rows=rows(report) if report else [],
                      report_decays=decay_rows(report) if report else [],
                      history=history, done=DONE.get(q.get("done", ""), ""),
                      shown=limits.CONSOLIDATION_REPORT_SHOWN)


async def apply(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    service = web.runtime.consolidation
    days, decay = ages(web, form)
    shown = form.get("fingerprint", "")

    def act() -> RunReport | None:
        now = service.preview(days, decay)
        if now.fingerprint != shown:
            return None
        return service.apply(days, decay, previewed=now)

    applied = await web.read(act)
    if applied is None:
        return RedirectResponse("/consolidation?" + urlencode(
            {"done": "changed", "days": f"{days:g}", "decay": f"{decay:g}"}), status_code=303)
    if applied.run is None:
        return RedirectResponse("/consolidation?done=nothing", status_code=303)
    return RedirectResponse("/consolidation?" + urlencode({"run": applied.run, "done": "applied"}),
                            status_code=303)


async def undo(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    run = form.get("run", "").strip()
    if not run:
        raise InvalidInput("which run to undo: the form names none")
    await web.read(web.runtime.consolidation.undo, run)
    return RedirectResponse("/consolidation?" + urlencode({"run": run, "done": "undone"}),
                            status_code=303)


PAGE = Page("consolidation", routes=(get("/consolidation", show),
                                     post("/consolidation/apply", apply),
                                     post("/consolidation/undo", undo)),
            nav="Consolidation", order=50)

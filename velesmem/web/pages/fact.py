"""A fact's page (``/fact/{id}``): its text, metadata, author, learned confidence (successes and
failures so far, and its recent changes with their cause), links in and out, duplicate group and supersede chain; and the actions —
forget, relate / unrelate, feedback, mark as superseded by another fact — each a POST through
the same service call the MCP tool makes (``submit_forget``, ``submit_relate``, …), answered
with a redirect (303)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from velesmem.errors import InvalidInput
from velesmem.ids import parse_id
from velesmem.memory.supersede import SUPERSEDES
from velesmem.store.types import (
    CAUSE_DECAY,
    CAUSE_DECAY_UNDONE,
    CAUSE_HELPFUL,
    CAUSE_NOT_HELPFUL,
)
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get, post

DONE = {"related": "The link was added.", "unrelated": "The link was removed.",
        "feedback": "Thanks: the confidence was updated.",
        "superseded": "Marked as superseded.", "unchanged": "No such link: nothing changed."}
CAUSES = {CAUSE_HELPFUL: "feedback: helpful", CAUSE_NOT_HELPFUL: "feedback: not helpful",
          CAUSE_DECAY: "lowered by a consolidation run",
          CAUSE_DECAY_UNDONE: "a consolidation run undone"}


def _id(request: Request) -> int:
    return parse_id(request.path_params["id"], "id")


def _back(fid: int, done: str) -> RedirectResponse:
    return RedirectResponse(f"/fact/{fid}?done={quote(done)}", status_code=303)


async def jump(web: WebContext, request: Request) -> Response:
    """``/fact?id=…`` (the navigation bar's box) → that fact's page."""
    raw = request.query_params.get("id", "").strip()
    if not raw:
        raise InvalidInput("give a memory id (a decimal number) to open its page")
    return RedirectResponse(f"/fact/{parse_id(raw, 'id')}", status_code=303)


async def show(web: WebContext, request: Request) -> Response:
    detail = await web.read(web.runtime.memory.fact, _id(request))
    done = request.query_params.get("done", "")
    return web.render(request, "fact.html", title="Memory", fact=detail,
                      done=DONE.get(done, ""), causes=CAUSES)


async def forget(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    fid = _id(request)
    await web.write(web.runtime.memory.submit_forget, fid)
    return RedirectResponse(f"/?done=forgotten&forgot={fid}", status_code=303)


async def relate(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    """Add an edge from this fact (direction ``out``) or to it (``in``)."""
    fid = _id(request)
    other, relation = form.get("other", "").strip(), form.get("relation", "").strip()
    src, dst = (other, fid) if form.get("direction") == "in" else (fid, other)
    await web.write(web.runtime.memory.submit_relate, src, dst, relation)
    return _back(fid, "related")


async def unrelate(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    fid = _id(request)
    src, dst = form.get("from", "").strip(), form.get("to", "").strip()
    result = await web.write(web.runtime.memory.submit_unrelate, src, dst,
                             form.get("relation", "").strip())
    return _back(fid, "unrelated" if result.found else "unchanged")


async def feedback(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    fid = _id(request)
    success = form.get("success")
    if success not in ("true", "false"):
        raise InvalidInput("feedback needs success = true or false")
    await web.write(web.runtime.memory.submit_feedback, fid, success == "true")
    return _back(fid, "feedback")


async def supersede(web: WebContext, request: Request, form: dict[str, str]) -> Response:
    """Mark this fact as superseded by the newer fact ``by``: the edge ``by --supersedes-->
    this``, as ``relate(by, this, "supersedes")`` makes it."""
    fid = _id(request)
    await web.write(web.runtime.memory.submit_relate, form.get("by", "").strip(), fid,
                    SUPERSEDES)
    return _back(fid, "superseded")


PAGE = Page("fact", routes=(
    get("/fact", jump), get("/fact/{id}", show),
    post("/fact/{id}/forget", forget), post("/fact/{id}/relate", relate),
    post("/fact/{id}/unrelate", unrelate), post("/fact/{id}/feedback", feedback),
    post("/fact/{id}/supersede", supersede),
), order=20)

"""The Memories page (``/``): browse every fact in id order, a page at a time (keyset paging
through ``list_memories``'s cursor: 100k facts are never loaded at once), or search them with
the hybrid recall the tools use (``recall_where``), each result's score broken down per signal
(``MemoryService.explain``); with *follow the graph*, the ranking of ``recall_fused`` (a walk from
the top hit boosts what it reaches), whose graph part is shown too. Filters: one metadata key = value, the author, a date range on
``_veles_date``, and the state (current, superseded, archived)."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import urlencode
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from velesmem import limits, validate
from velesmem.errors import InvalidInput
from velesmem.memory.results import FusedResult, RecallResult
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get

STATES = ("current", "all", "superseded", "archived")


@dataclass(frozen=True)
class Filters:
    """The page's filters as the form sent them (strings; empty = unset)."""

    key: str
    value: str
    author: str
    since: str
    until: str
    state: str

    @classmethod
    def of(cls, request: Request) -> Filters:
        q = request.query_params
        state = q.get("state", "current")
        if state not in STATES:
            raise InvalidInput(f"state must be one of {', '.join(STATES)}, got {state!r}")
        return cls(q.get("key", "").strip(), q.get("value", ""), q.get("author", "").strip(),
                   q.get("since", "").strip(), q.get("until", "").strip(), state)

    def exact(self) -> dict[str, Any]:
        """The exact-match filter of list_memories (metadata key and author)."""
        out: dict[str, Any] = {}
        if self.key:
            out[self.key] = typed_value(self.value)
        if self.author:
            out[validate.AUTHOR_KEY] = self.author
        return out

    def dates(self) -> list[dict[str, Any]]:
        """The date range as recall_where predicates on ``_veles_date`` (YYYYMMDD)."""
        out = []
        if self.since:
            out.append({"field": validate.DATE_KEY, "op": "ge", "value": day(self.since, "since")})
        if self.until:
            out.append({"field": validate.DATE_KEY, "op": "le", "value": day(self.until, "until")})
        return out

    def predicates(self) -> list[dict[str, Any]]:
        """Every filter as recall_where's typed predicates."""
        out = [{"field": k, "op": "eq", "value": v} for k, v in self.exact().items()]
        for p in out:
            if not isinstance(p["value"], (str, int, float, bool)):
                raise InvalidInput("a search filters on a string, number or boolean value")
        return out + self.dates()


def typed_value(text: str) -> Any:
    """A filter value: JSON when it parses (``3``, ``true``, ``"x"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def day(text: str, name: str) -> int:
    """``YYYY-MM-DD`` → YYYYMMDD; InvalidInput otherwise."""
    try:
        d = dt.date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a date as YYYY-MM-DD, got {text!r}") from None
    return d.year * 10000 + d.month * 100 + d.day


def _size(request: Request, default: int) -> int:
    raw = request.query_params.get("n", "")
    if not raw:
        return default
    if not raw.isdigit():
        raise InvalidInput(f"n must be a positive integer, got {raw!r}")
    return min(max(int(raw), 1), limits.MAX_DASHBOARD_PAGE)


def _keep(state: str, archived: bool, superseded: bool) -> bool:
    if state == "current":
        return not archived and not superseded
    if state == "superseded":
        return superseded
    if state == "archived":
        return archived
    return True


async def show(web: WebContext, request: Request) -> Response:
    memory = web.runtime.memory
    filters = Filters.of(request)
    query = request.query_params.get("q", "").strip()
    size = _size(request, limits.DEFAULT_DASHBOARD_PAGE)
    rows: list[dict[str, Any]] = []
    next_cursor = None
    warnings: list[str] = []
    graph = request.query_params.get("graph") == "1"
    fused: dict[int, dict[str, float]] = {}
    if query:
        preds = filters.predicates()
        if graph:  # recall_fused: the hybrid ranking plus a graph walk from the top hit
            if filters.dates():
                raise InvalidInput("following the graph (recall_fused) takes exact filters only: "
                                   "clear the date range, or the graph box")
            walked = await web.read(memory.recall_fused, query, k=size,
                                    filter=filters.exact() or None)
            fused = {m.id: {"hybrid": walked.hybrid.get(m.id, 0.0),
                            "graph": walked.graph.get(m.id, 0.0)} for m in walked.memories}
            found: RecallResult | FusedResult = walked
        else:
            found = await web.read(memory.recall_where, query, preds, k=size)
        warnings = list(found.warnings)
        ids = [m.id for m in found.memories]
        signals = await web.read(memory.explain, query, ids, preds) if ids else {}
        archived, superseded = await web.read(memory.states, ids) if ids else (set(), set())
        for m in found.memories:
            sup = m.superseded_by is not None or m.id in superseded
            if _keep(filters.state, m.id in archived, sup):
                rows.append({"id": m.id, "content": m.content, "metadata": m.metadata,
                             "signals": signals.get(m.id), "fused": fused.get(m.id),
                             "score": m.score,
                             "archived": m.id in archived, "superseded": sup,
                             "duplicates": m.duplicates})
    else:
        rows, next_cursor = await _browse(web, filters, request.query_params.get("cursor") or None,
                                          size)
    done = request.query_params.get("done", "")
    return web.render(request, "memories.html", title="Memories", query=query, filters=filters,
                      states=STATES, rows=rows, next_cursor=next_cursor, size=size,
                      warnings=warnings, done=done if done in ("forgotten",) else "", graph=graph,
                      params=_params(request))


async def _browse(web: WebContext, filters: Filters, cursor: str | None,
                  size: int) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``size`` facts after ``cursor`` in id order that pass the filters, and the cursor
    of the next page (None: done). The state filter is applied to each page read, so pages are
    read until ``size`` passed, at most ``DASHBOARD_SCAN_PAGES`` of them (bounded work: the
    Next link goes on from where the scan stopped)."""
    memory = web.runtime.memory
    rows: list[dict[str, Any]] = []
    for _ in range(limits.DASHBOARD_SCAN_PAGES):
        listed = await web.read(memory.list_memories, cursor, size, filters.exact() or None,
                                include_archived=filters.state in ("all", "archived"),
                                where=filters.dates() or None)
        ids = [m.id for m in listed.memories]
        archived, superseded = await web.read(memory.states, ids) if ids else (set(), set())
        for lm in listed.memories:
            if _keep(filters.state, lm.id in archived, lm.id in superseded):
                rows.append({"id": lm.id, "content": lm.content, "metadata": lm.metadata,
                             "signals": None, "fused": None, "score": None, "archived": lm.id in archived,
                             "superseded": lm.id in superseded, "duplicates": ()})
        cursor = listed.next_cursor
        if len(rows) >= size or cursor is None:
            break
    if len(rows) > size:  # the next page starts after the last one shown
        rows = rows[:size]
        cursor = str(rows[-1]["id"])
    return rows, cursor


def _params(request: Request) -> str:
    """The current filters as a query string, without the cursor (for the next-page link)."""
    keep = {k: v for k, v in request.query_params.items() if k not in ("cursor", "done") and v}
    return urlencode(keep)


PAGE = Page("memories", routes=(get("/", show),), nav="Memories", order=10)

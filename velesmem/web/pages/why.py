"""The Why page (``/why``): a question goes to ``why`` — the same service call as the MCP tool —
and the walk comes back drawn as a graph (``velesmem.web.whygraph``: columns by hop, edges
labelled with their relation or the identifier/entity that linked two facts), keyboard-navigable
(``static/why.js``), with the same walk as a list below it for reading without the drawing."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from velesmem import limits
from velesmem.errors import InvalidInput
from velesmem.memory.results import WhyEdge, WhyNode, WhyResult
from velesmem.web import whygraph
from velesmem.web.context import WebContext
from velesmem.web.registry import Page, get


@dataclass(frozen=True)
class Drawn:
    """A walk ready for the template: the SVG, its facts by hop, its edges with texts."""

    svg: Markup
    hops: list[tuple[int, list[WhyNode]]]
    edges: list[tuple[WhyEdge, str, str]]  # the edge, the start of its two facts' texts
    truncated: bool
    warnings: list[str]


def fact_href(node_id: int) -> str:
    return f"/fact/{node_id}"


def draw(result: WhyResult, question: str) -> Drawn:
    """The drawing and the reading list of one walk (CPU work: run it off the event loop)."""
    svg = whygraph.render(whygraph.layout(result.nodes, result.edges), fact_href,
                          f"the walk from the best match for: {question}")
    hops: dict[int, list[WhyNode]] = {}
    for n in result.nodes:
        hops.setdefault(n.hop, []).append(n)
    text = {n.id: n.content for n in result.nodes}
    edges = [(e, text.get(e.from_, ""), text.get(e.to, "")) for e in result.edges]
    return Drawn(svg, sorted(hops.items()), edges, result.truncated, list(result.warnings))


def hops_of(raw: str | None) -> int:
    if raw is None or raw == "":
        return limits.DEFAULT_WHY_HOPS
    try:
        hops = int(raw)
    except ValueError:
        raise InvalidInput(f"hops must be a whole number, got {raw[:40]!r}") from None
    if not 0 <= hops <= limits.MAX_WHY_HOPS:
        raise InvalidInput(f"hops must be between 0 and {limits.MAX_WHY_HOPS}, got {hops}")
    return hops


async def show(web: WebContext, request: Request) -> Response:
    question = request.query_params.get("q", "").strip()
    hops = hops_of(request.query_params.get("hops"))
    drawn = None
    if question:
        memory = web.runtime.memory

        def walk() -> Drawn:
            return draw(memory.why(question, hops), question)

        drawn = await web.read(walk)
    return web.render(request, "why.html", title="Why", question=question, hops=hops,
                      hop_choices=range(limits.MAX_WHY_HOPS + 1), drawn=drawn)


PAGE = Page("why", routes=(get("/why", show),), nav="Why", order=30)

"""The Why, Status, Consolidation and Savings pages in process, through the daemon's whole ASGI app
under ``httpx.ASGITransport`` with a real Runtime (SQLite + FAISS, hash embedder): what each page
shows for a seeded store, that every text is escaped, that consolidation's preview / apply / undo
act through the same service as the command, and that a form without its CSRF token or from
another origin changes nothing. The browser tests are in tests/dashboard/."""

from __future__ import annotations

import logging
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from velesmem.agents.demo import CHAINS
from velesmem.config import Settings
from velesmem.daemon.address import DaemonAddress
from velesmem.daemon.app import build_app
from velesmem.daemon.auth import AuthPolicy
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from velesmem.runtime import Runtime

pytestmark = pytest.mark.anyio

PORT = 8765  # never bound: it names the authority the Host guard admits
BASE = f"https://127.0.0.1:{PORT}"
ORIGIN = {"Origin": BASE}
LOOPBACK = AuthPolicy("auto", checks=True, required=False)
HOSTILE = '<script>alert(1)</script> <img src=x onerror="alert(2)"> javascript:alert(3) heron'
CSRF_COOKIE = "__Host-velesmem-csrf"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Dash:
    http: httpx.AsyncClient
    runtime: Runtime

    async def get(self, path: str, **params: str) -> httpx.Response:
        return await self.http.get(BASE + path, params=params or None)

    async def post(self, path: str, data: dict[str, str], *, csrf: bool = True,
                   origin: bool = True) -> httpx.Response:
        await self.http.get(BASE + "/why")  # sets the CSRF cookie
        form = dict(data)
        if csrf:
            token = self.http.cookies.get(CSRF_COOKIE)
            assert token
            form["csrf"] = token
        return await self.http.post(BASE + path, data=form, headers=ORIGIN if origin else {})


class Clock:
    """The Runtime's clock, moved by hand (a fact made old without waiting)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def dashboard(root: Path, clock: Clock | None = None) -> AsyncIterator[Dash]:
    config = Settings(path=root / "store", tls_dir=root / "tls", embedder="hash", autograph="off")
    runtime = Runtime.open(config, start=False, clock=clock)
    try:
        app, _ = build_app(build_server(AppContext(runtime)), runtime,
                           DaemonAddress("127.0.0.1", PORT, "https"), idle_timeout_s=600.0,
                           auth=LOOPBACK)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=30) as http:
            await runtime.ready()
            yield Dash(http, runtime)
    finally:
        runtime.close()


@pytest.fixture
async def dash(tmp_path: Path) -> AsyncIterator[Dash]:
    async with dashboard(tmp_path) as d:
        yield d


def seed_chain(d: Dash) -> dict[str, int]:
    """The demo's first chain: decision → implemented_by → PR → fixes → ticket."""
    memory, chain = d.runtime.memory, CHAINS[0]
    ids = {role: memory.remember(getattr(chain, role)).id for role in ("ticket", "pr", "decision")}
    for src, relation, dst in chain.relations:
        memory.relate(ids[src], ids[dst], relation)
    return ids


def svg_of(page: str) -> ET.Element:
    found = re.search(r"<svg class=\"why-graph\".*?</svg>", page, re.S)
    assert found, "no drawing in the page"
    return ET.fromstring(found.group(0))


async def test_the_why_page_draws_the_ticket_at_hop_two_with_labelled_edges(dash: Dash) -> None:
    ids = seed_chain(dash)
    r = await dash.get("/why", q=CHAINS[0].question)
    assert r.status_code == 200, r.text
    svg = svg_of(r.text)
    ns = "{http://www.w3.org/2000/svg}"
    hops = {a.get("href"): a.get("data-hop") for a in svg.iter(f"{ns}a")}
    assert hops == {f"/fact/{ids['decision']}": "0", f"/fact/{ids['pr']}": "1",
                    f"/fact/{ids['ticket']}": "2"}
    labels = {t.text for t in svg.iter(f"{ns}text") if t.get("class") == "why-label"}
    assert labels == {"implemented_by", "fixes"}
    assert '<script src="/static/why.js" defer></script>' in r.text
    assert (await dash.get("/static/why.js")).status_code == 200
    assert "EPIC-317" in r.text.split("The walk as a list")[1]  # the list, for reading


async def test_the_why_page_walks_as_the_tool_does(dash: Dash) -> None:
    seed_chain(dash)
    walk = dash.runtime.memory.why(CHAINS[0].question, 1)
    r = await dash.get("/why", q=CHAINS[0].question, hops="1")
    drawn = {a.get("data-id") for a in svg_of(r.text).iter("{http://www.w3.org/2000/svg}a")}
    assert drawn == {str(n.id) for n in walk.nodes}


async def test_the_why_page_escapes_facts_and_refuses_bad_hops(dash: Dash) -> None:
    a = dash.runtime.memory.remember(HOSTILE).id
    b = dash.runtime.memory.remember("the heron's nest").id
    dash.runtime.memory.relate(a, b, '"><script>alert(4)</script>')
    r = await dash.get("/why", q="heron alert")
    assert r.status_code == 200
    body = r.text.split("</head>")[1]
    assert "<script" not in body and "<img" not in body and "onerror=\"" not in body
    assert (await dash.get("/why", q="heron", hops="99")).status_code == 400
    assert (await dash.get("/why", q="heron", hops="x")).status_code == 400
    empty = await dash.get("/why")
    assert empty.status_code == 200 and "why-graph" not in empty.text


async def test_the_status_page_shows_the_facts_imported_from_each_source(dash: Dash) -> None:
    from tests.support.importing import FIXTURES, import_into

    assert "Imported from" not in (await dash.get("/status")).text
    import_into(dash.runtime, "server-memory", FIXTURES / "server-memory" / "memory.jsonl")
    r = await dash.get("/status")
    assert re.search(r'<dt>Imported from server-memory</dt><dd class="imported-count">8<', r.text)


async def test_the_status_page_shows_state_store_counts_and_recent_errors(dash: Dash) -> None:
    seed_chain(dash)
    logging.getLogger("velesmem.test").error("the disk <b>filled</b> up")
    r = await dash.get("/status")
    assert r.status_code == 200, r.text
    assert re.search(r'id="state">ready<', r.text)
    assert re.search(r'id="fact-count">3<', r.text) and re.search(r'id="edge-count">2<', r.text)
    assert str(dash.runtime.store.location) in r.text
    assert "sqlite" in r.text and dash.runtime.embedder.model in r.text
    assert "the disk &lt;b&gt;filled&lt;/b&gt; up" in r.text
    assert "No migration has run" in r.text


async def test_the_status_page_lists_an_open_mcp_session(dash: Dash) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "status-test", "version": "1"}}}
    opened = await dash.http.post(BASE + "/mcp", json=init, headers={
        "Accept": "application/json, text/event-stream", "User-Agent": "status-test-agent/1.0"})
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    r = await dash.get("/status")
    assert session[:12] in r.text and "status-test-agent/1.0" in r.text
    assert "<td>status-test 1</td>" in r.text  # its initialize's clientInfo


def seed_duplicates(d: Dash) -> tuple[int, int, int]:
    memory = d.runtime.memory
    a = memory.remember("The rate limiter allows 600 requests per minute per key").id
    b = memory.remember("Rate limiter: 600 requests each minute for every API key").id
    c = memory.remember("600 requests a minute per key is the rate limit").id
    memory.relate(b, a, "duplicate_of")
    memory.relate(c, a, "duplicate_of")
    return a, b, c


def listed(d: Dash) -> set[int]:
    return {m.id for m in d.runtime.memory.list_memories(limit=100).memories}


async def test_consolidation_previews_applies_and_undoes_through_the_service(dash: Dash) -> None:
    ids = set(seed_duplicates(dash))
    first = await dash.get("/consolidation")
    assert first.status_code == 200 and "No run has been applied" in first.text
    preview = await dash.get("/consolidation", preview="1")
    assert "2 fact(s) would be archived" in preview.text
    assert listed(dash) == ids  # a preview changes nothing
    fingerprint = re.search(r'name="fingerprint" value="([0-9a-f]+)"', preview.text)
    assert fingerprint
    applied = await dash.post("/consolidation/apply", {"fingerprint": fingerprint.group(1),
                                                       "days": "30"})
    assert applied.status_code == 303
    run = re.search(r"run=(consolidate-[0-9a-f]+)", applied.headers["location"])
    assert run
    assert len(listed(dash)) == 1
    report = await dash.get("/consolidation", run=run.group(1), done="applied")
    assert "The run was applied." in report.text and "applied: 2 fact(s)" in report.text
    assert 'class="undo"' in report.text
    undone = await dash.post("/consolidation/undo", {"run": run.group(1)})
    assert undone.status_code == 303
    assert listed(dash) == ids
    history = dash.runtime.consolidation.history()
    assert [(h.run, h.undone) for h in history] == [(run.group(1), True)]


async def test_an_apply_from_a_stale_preview_applies_nothing_and_shows_the_plan_now(
        dash: Dash) -> None:
    ids = set(seed_duplicates(dash))
    r = await dash.post("/consolidation/apply", {"fingerprint": "0" * 32, "days": "30"})
    assert r.status_code == 303 and "done=changed" in r.headers["location"]
    assert listed(dash) == ids and dash.runtime.consolidation.history() == []
    shown = await dash.http.get(BASE + r.headers["location"])
    assert "Nothing was applied" in shown.text and "2 fact(s) would be archived" in shown.text


async def test_consolidation_forms_without_csrf_or_origin_change_nothing(dash: Dash) -> None:
    ids = set(seed_duplicates(dash))
    fingerprint = dash.runtime.consolidation.preview().fingerprint
    for csrf, origin in ((False, True), (True, False)):
        r = await dash.post("/consolidation/apply", {"fingerprint": fingerprint, "days": "30"},
                            csrf=csrf, origin=origin)
        assert r.status_code == 403
    assert listed(dash) == ids and dash.runtime.consolidation.history() == []
    assert (await dash.get("/consolidation/apply")).status_code in (404, 405)


async def test_a_run_that_decays_confidence_shows_and_undoes_it(tmp_path: Path) -> None:
    clock = Clock()
    async with dashboard(tmp_path, clock) as dash:
        fid = dash.runtime.memory.remember("the heron nests by the mill").id
        before = dash.runtime.memory.confidences([fid])[fid]
        clock.now += 200 * 86_400.0
        preview = await dash.get("/consolidation", preview="1", decay="180")
        assert "0 fact(s) would be archived, 1 decayed" in preview.text
        assert 'class="decays"' in preview.text and "the heron nests" in preview.text
        fingerprint = re.search(r'name="fingerprint" value="([0-9a-f]+)"', preview.text)
        assert fingerprint
        applied = await dash.post("/consolidation/apply", {
            "fingerprint": fingerprint.group(1), "days": "30", "decay": "180"})
        run = re.search(r"run=(consolidate-[0-9a-f]+)", applied.headers["location"])
        assert run
        assert dash.runtime.memory.confidences([fid])[fid] < before
        await dash.post("/consolidation/undo", {"run": run.group(1)})
        assert dash.runtime.memory.confidences([fid])[fid] == pytest.approx(before)


async def test_undoing_an_unknown_run_is_a_not_found_page(dash: Dash) -> None:
    r = await dash.post("/consolidation/undo", {"run": "consolidate-<b>x</b>"})
    assert r.status_code == 404 and "<b>x</b>" not in r.text


async def test_the_savings_page_plots_tokens_saved_per_day(dash: Dash) -> None:
    empty = await dash.get("/savings")
    assert empty.status_code == 200 and "nothing recorded yet" in empty.text
    request = {"query": "canary", "token_budget": 10, "project": "p",
               "fragments": [{"content": "word " * 300, "kind": "text"}]}
    for _ in range(2):
        dash.runtime.context.compile_context(request)
    totals = dash.runtime.context.savings("p")
    r = await dash.get("/savings", project="p")
    assert re.search(r'id="events">2<', r.text)
    assert re.search(rf'id="tokens-saved">{totals["tokens_saved"]:,}<', r.text)
    assert r.text.count('class="plot-bar"') == 1  # both compilations fall on one day
    other = await dash.get("/savings", project="another")
    assert re.search(r'id="events">0<', other.text)

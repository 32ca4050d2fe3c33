"""The dashboard in process, through the daemon's whole ASGI app under ``httpx.ASGITransport``:
a real Runtime (SQLite + FAISS, the hash embedder), every guard, the pages and their actions,
the security model (CSP, CSRF, same-origin POSTs, GETs that change nothing, the login beyond
loopback). The browser tests are in tests/dashboard/."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from velesmem.config import Settings
from velesmem.daemon.address import DaemonAddress
from velesmem.daemon.app import build_app
from velesmem.daemon.auth import AuthPolicy
from velesmem.daemon.tokens import new_token, token_digest
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from velesmem.ids import to_i64
from velesmem.runtime import Runtime
from velesmem.store import GraphWrite
from velesmem.web.security import CSP

pytestmark = pytest.mark.anyio

PORT = 8765  # never bound: it names the authority the Host guard admits
BASE = f"https://127.0.0.1:{PORT}"
ORIGIN = {"Origin": BASE}
LOOPBACK = AuthPolicy("auto", checks=True, required=False)
TOKEN_REQUIRED = AuthPolicy("token", checks=True, required=True)
HOSTILE = ('<script>alert(1)</script> <img src=x onerror="alert(2)"> '
           '<a href="javascript:alert(3)">click</a> the hostile heron')


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Dash:
    http: httpx.AsyncClient
    runtime: Runtime

    async def csrf(self, path: str = "/") -> str:
        """Open ``path`` (which sets the CSRF cookie, if not yet set) and read the token a form
        of this dashboard carries (the cookie's value)."""
        await self.http.get(BASE + path)
        token = self.http.cookies.get("__Host-velesmem-csrf")
        assert token
        return token

    async def post(self, path: str, data: dict[str, str], *, origin: bool = True,
                   csrf: bool = True, page: str = "/") -> httpx.Response:
        form = dict(data)
        if csrf:
            form["csrf"] = await self.csrf(page)
        return await self.http.post(BASE + path, data=form, headers=ORIGIN if origin else {})

    def ids(self) -> set[int]:
        listed = self.runtime.memory.list_memories(limit=1000, include_archived=True)
        return {m.id for m in listed.memories}


@asynccontextmanager
async def dashboard(root: Path, auth: AuthPolicy = LOOPBACK) -> AsyncIterator[Dash]:
    config = Settings(path=root / "store", tls_dir=root / "tls", embedder="hash", autograph="off")
    runtime = Runtime.open(config, start=False)
    try:
        if auth.required:
            runtime.store.put_token("laptop", token_digest(TOKEN), time.time())
        app, _ = build_app(build_server(AppContext(runtime)), runtime,
                           DaemonAddress("127.0.0.1", PORT, "https"), idle_timeout_s=600.0,
                           auth=auth)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=30) as http:
            await runtime.ready()
            yield Dash(http, runtime)
    finally:
        runtime.close()


TOKEN = new_token()


@pytest.fixture
async def dash(tmp_path: Path) -> AsyncIterator[Dash]:
    async with dashboard(tmp_path) as d:
        yield d


def remember(d: Dash, text: str, **metadata: Any) -> int:
    return d.runtime.memory.remember(text, metadata=metadata or None).id


async def test_every_page_answers_with_the_strict_csp_and_no_store(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    for path in ("/", "/?q=heron", f"/fact/{fid}"):
        r = await dash.http.get(BASE + path)
        assert r.status_code == 200, (path, r.text)
        assert r.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert r.headers["cache-control"] == "no-store"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in r.text.split("</head>")[1]  # no inline script in the body


async def test_the_pages_load_only_assets_shipped_in_the_package(dash: Dash) -> None:
    page = await dash.http.get(BASE + "/")
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert {"/static/dashboard.css", "/static/dashboard.js"} <= set(assets)
    for asset in assets:
        assert (await dash.http.get(BASE + asset)).status_code == 200
    assert "http://" not in page.text and "https://" not in page.text  # no CDN


async def test_a_search_finds_a_fact_and_breaks_its_score_down_per_signal(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the old mill", project="birds")
    remember(dash, "the otter swims in the river", project="mammals")
    r = await dash.http.get(BASE + "/", params={"q": "heron mill"})
    assert r.status_code == 200
    assert f'href="/fact/{fid}"' in r.text
    assert "the otter" not in r.text
    for signal in ("text", "vector", "graph", "age", "confidence"):
        assert f"<th>{signal}</th>" in r.text
    explained = dash.runtime.memory.explain("heron mill", [fid])[fid]
    assert explained.text == 1.0 and explained.text_part > 0
    assert explained.key == pytest.approx(explained.text_part + explained.vector_part)


async def test_the_breakdown_leaves_the_tool_results_unchanged(dash: Dash) -> None:
    remember(dash, "the heron nests by the old mill")
    before = dash.runtime.memory.recall("heron", k=5).to_dict()
    await dash.http.get(BASE + "/", params={"q": "heron"})
    assert dash.runtime.memory.recall("heron", k=5).to_dict() == before


async def test_filters_by_metadata_author_and_date(dash: Dash) -> None:
    birds = remember(dash, "the heron nests by the mill", project="birds", _veles_date=20260101)
    fish = remember(dash, "the heron eats the trout", project="fish", _veles_date=20260301)
    only_birds = await dash.http.get(BASE + "/", params={"key": "project", "value": "birds"})
    assert f"/fact/{birds}" in only_birds.text and f"/fact/{fish}" not in only_birds.text
    march = await dash.http.get(BASE + "/", params={"q": "heron", "since": "2026-02-01"})
    assert f"/fact/{fish}" in march.text and f"/fact/{birds}" not in march.text
    nobody = await dash.http.get(BASE + "/", params={"author": "laptop"})
    assert "No memory matches." in nobody.text
    bad = await dash.http.get(BASE + "/", params={"since": "yesterday"})
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text


async def test_keyset_paging_visits_every_fact_once(dash: Dash) -> None:
    made = {remember(dash, f"fact number {n} about the weir") for n in range(23)}
    seen: list[int] = []
    url = BASE + "/?n=10"
    while url:
        page = await dash.http.get(url)
        seen += [int(x) for x in re.findall(r'href="/fact/(\d+)"', page.text)]
        nxt = re.search(r'rel="next" href="([^"]+)"', page.text)
        url = BASE + nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert sorted(seen) == sorted(made)


async def test_untrusted_text_is_escaped_on_every_page(dash: Dash) -> None:
    fid = remember(dash, HOSTILE, note="<b>bold</b>")
    for path in ("/", "/?q=hostile+heron", f"/fact/{fid}"):
        text = (await dash.http.get(BASE + path)).text
        assert "<script>alert" not in text and "<img src=x" not in text
        assert 'href="javascript:' not in text and "<b>bold" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


async def test_the_fact_page_shows_links_duplicates_and_the_supersede_chain(dash: Dash) -> None:
    old = remember(dash, "the build server is called hawk")
    new = remember(dash, "the kettle is in the kitchen")
    other = remember(dash, "the deploy uses the build server")
    memory = dash.runtime.memory
    memory.relate(other, old, "uses")
    memory.relate(new, old, "supersedes")
    page = (await dash.http.get(BASE + f"/fact/{old}")).text
    assert "superseded by" in page and f'href="/fact/{new}"' in page
    assert "uses" in page and f'href="/fact/{other}"' in page
    detail = memory.fact(old)
    assert detail.newer == (new,) and detail.links_in[0].other in (other, new)


async def test_forget_from_the_fact_page_removes_the_fact(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    r = await dash.post(f"/fact/{fid}/forget", {}, page=f"/fact/{fid}")
    assert r.status_code == 303 and r.headers["location"].startswith("/?done=forgotten")
    assert fid not in dash.ids()
    assert (await dash.http.get(BASE + f"/fact/{fid}")).status_code == 404


async def test_relate_unrelate_feedback_and_supersede_go_through_the_service(dash: Dash) -> None:
    a = remember(dash, "the heron nests by the mill")
    b = remember(dash, "the mill stands on the river")
    memory = dash.runtime.memory
    assert (await dash.post(f"/fact/{a}/relate", {"relation": "near", "other": str(b)})).status_code == 303
    assert any(link.other == b and link.relation == "near" for link in memory.fact(a).links_out)
    await dash.post(f"/fact/{a}/unrelate", {"from": str(a), "to": str(b), "relation": "near"})
    assert not any(link.relation == "near" for link in memory.fact(a).links_out)
    before = memory.fact(a).confidence
    await dash.post(f"/fact/{a}/feedback", {"success": "true"})
    assert memory.fact(a).confidence > before
    await dash.post(f"/fact/{a}/supersede", {"by": str(b)})
    assert memory.fact(a).superseded_by == b


async def test_the_fact_page_lists_the_confidence_history_newest_first_escaped(
        dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    assert "No change yet." in (await dash.http.get(BASE + f"/fact/{fid}")).text
    await dash.post(f"/fact/{fid}/feedback", {"success": "true"}, page=f"/fact/{fid}")
    await dash.post(f"/fact/{fid}/feedback", {"success": "false"}, page=f"/fact/{fid}")
    # a cause the page does not name is shown as stored, escaped like any text
    dash.runtime.store.write_graph(GraphWrite(
        now=time.time(), confidence_deltas=((to_i64(fid), -0.05),),
        confidence_cause=HOSTILE)).result()
    page = (await dash.http.get(BASE + f"/fact/{fid}")).text
    history = re.search(r'<ol class="confidence-history">(.*?)</ol>', page, re.S)
    assert history, "no confidence history on the page"
    items = re.findall(r"<li>(.*?)</li>", history.group(1), re.S)
    assert len(items) == 3
    assert "0.55 (feedback: not helpful)" in items[1] and "0.60 (feedback: helpful)" in items[2]
    assert "0.50" in items[0] and "&lt;script&gt;alert(1)&lt;/script&gt;" in items[0]
    assert "<script>alert" not in page and "<img src=x" not in page


async def test_bad_input_to_an_action_is_a_400_page_and_changes_nothing(dash: Dash) -> None:
    a = remember(dash, "the heron nests by the mill")
    r = await dash.post(f"/fact/{a}/relate", {"relation": "near", "other": "not-an-id"})
    assert r.status_code == 400
    assert dash.runtime.memory.fact(a).links_out == ()
    assert (await dash.http.get(BASE + "/fact/123456789")).status_code == 404
    assert (await dash.http.get(BASE + "/fact/nope")).status_code == 400


async def test_a_cross_origin_post_is_refused_and_changes_nothing(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    token = await dash.csrf()
    foreign = await dash.http.post(BASE + f"/fact/{fid}/forget", data={"csrf": token},
                                   headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    missing = await dash.post(f"/fact/{fid}/forget", {}, origin=False)
    assert missing.status_code == 403
    assert fid in dash.ids()


async def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    await dash.http.get(BASE + "/")  # the cookie is set; the form field is what is missing
    none = await dash.post(f"/fact/{fid}/forget", {}, csrf=False)
    wrong = await dash.post(f"/fact/{fid}/forget", {"csrf": "x" * 43}, csrf=False)
    assert none.status_code == wrong.status_code == 403
    assert fid in dash.ids()


async def test_a_get_changes_nothing(dash: Dash) -> None:
    fid = remember(dash, "the heron nests by the mill")
    other = remember(dash, "the mill stands on the river")
    before = dash.runtime.memory.fact(fid)
    for action in ("forget", "relate", "unrelate", "feedback", "supersede"):
        r = await dash.http.get(BASE + f"/fact/{fid}/{action}",
                                params={"other": str(other), "relation": "near", "by": str(other),
                                        "success": "true"})
        assert r.status_code in (404, 405), action
    assert dash.runtime.memory.fact(fid) == before
    assert dash.ids() == {fid, other}


async def test_loopback_with_auto_opens_without_a_login(dash: Dash) -> None:
    assert (await dash.http.get(BASE + "/")).status_code == 200
    assert (await dash.http.get(BASE + "/login")).status_code == 303


async def test_a_required_token_means_a_login_that_sets_a_strict_cookie(tmp_path: Path) -> None:
    async with dashboard(tmp_path, TOKEN_REQUIRED) as d:
        first = await d.http.get(BASE + "/?q=x")
        assert first.status_code == 303 and first.headers["location"].startswith("/login?next=")
        assert (await d.http.post(BASE + "/logout", headers=ORIGIN)).status_code == 401
        bad = await d.post("/login", {"token": new_token(), "next": "/"}, page="/login")
        assert bad.status_code == 401 and "session" not in bad.headers.get("set-cookie", "")
        good = await d.post("/login", {"token": TOKEN, "next": "//evil.example/"}, page="/login")
        assert good.status_code == 303 and good.headers["location"] == "/"
        cookie = next(c for c in good.headers.get_list("set-cookie") if "session" in c)
        assert cookie.startswith("__Host-velesmem-session=")
        for flag in ("HttpOnly", "Secure", "SameSite=Strict", "Path=/"):
            assert flag in cookie
        page = await d.http.get(BASE + "/")
        assert page.status_code == 200 and "laptop" in page.text
        d.runtime.store.revoke_token("laptop", time.time())  # the session ends with its token
        assert (await d.http.get(BASE + "/")).status_code == 303


async def test_the_fact_page_names_the_duplicate_group_with_its_texts(dash: Dash) -> None:
    first = remember(dash, "The grey heron nests by the old mill on the river Weir", project="birds")
    again = remember(dash, "The grey heron nests by the old mill on the river Weir.", project="birds")
    assert dash.runtime.memory.fact(again).duplicates == (first,)
    page = (await dash.http.get(BASE + f"/fact/{again}")).text
    group = page.split("<h2>Duplicate group</h2>")[1].split("<h2>")[0]
    assert f'href="/fact/{first}"' in group and "grey heron nests" in group


async def test_the_breakdown_normalises_text_among_the_facts_the_filter_admits(dash: Dash) -> None:
    strong = remember(dash, "heron heron heron by the mill", project="a")
    weak = remember(dash, "a heron flew over the weir at dawn today", project="b")
    only_b = [{"field": "project", "op": "eq", "value": "b"}]
    filtered = dash.runtime.memory.explain("heron", [strong, weak], only_b)
    unfiltered = dash.runtime.memory.explain("heron", [strong, weak])
    assert filtered[weak].text == 1.0  # the best match the filter admits
    assert unfiltered[weak].text < 1.0 and unfiltered[strong].text == 1.0


async def test_a_state_filter_reads_on_until_the_page_is_full(dash: Dash) -> None:
    memory = dash.runtime.memory
    plain = [remember(dash, f"plain fact number {n} about the weir") for n in range(30)]
    older = [remember(dash, f"the gauge {n} read {n} metres") for n in range(3)]
    for n, old in enumerate(older):
        memory.relate(plain[n], old, "supersedes")
    seen: list[int] = []
    url = BASE + "/?n=2&state=superseded"
    pages = 0
    while url:
        page = await dash.http.get(url)
        pages += 1
        seen += [int(x) for x in re.findall(r'class="fact-link" href="/fact/(\d+)"', page.text)]
        nxt = re.search(r'rel="next" href="([^"]+)"', page.text)
        url = BASE + nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert sorted(seen) == sorted(older)
    assert pages <= 3  # 33 facts read 2 at a time, but pages fill before they are shown


async def test_following_the_graph_ranks_as_recall_fused_and_shows_the_graph_part(dash: Dash) -> None:
    decision = remember(dash, "we chose the blue deploy pipeline for payments")
    ticket = remember(dash, "ticket OPS-7 tracks the rollout checklist")
    dash.runtime.memory.relate(decision, ticket, "tracked_by")
    plain = (await dash.http.get(BASE + "/", params={"q": "blue deploy pipeline"})).text
    assert f'href="/fact/{ticket}"' not in plain
    walked = await dash.http.get(BASE + "/", params={"q": "blue deploy pipeline", "graph": "1"})
    assert walked.status_code == 200
    assert f'href="/fact/{ticket}"' in walked.text and "<th>fused</th>" in walked.text
    fused = dash.runtime.memory.recall_fused("blue deploy pipeline")
    assert fused.graph[ticket] > 0 and fused.graph[decision] == 0
    assert [m.id for m in fused.memories][:2] == [decision, ticket]
    dated = await dash.http.get(BASE + "/", params={"q": "x", "graph": "1", "since": "2026-01-01"})
    assert dated.status_code == 400


@pytest.mark.parametrize(("bind", "mode", "login"), [
    ("127.0.0.1", "auto", False), ("0.0.0.0", "auto", True), ("127.0.0.1", "token", True),
    ("0.0.0.0", "proxy", False)])
def test_the_dashboard_asks_for_a_login_exactly_when_mcp_asks_for_a_token(
        tmp_path: Path, bind: str, mode: str, login: bool) -> None:
    from velesmem.daemon.app import web_access
    from velesmem.daemon.auth import StoreTokenVerifier, auth_policy

    config = Settings(path=tmp_path / "store", tls_dir=tmp_path / "tls", embedder="hash",
                      autograph="off", http_auth=mode)
    with Runtime.open(config, start=False) as runtime:
        runtime.store.put_token("laptop", token_digest(TOKEN), time.time())
        policy = auth_policy(config, DaemonAddress(bind, PORT, "https"), runtime.store)
        assert policy.required == login
        assert web_access(policy, StoreTokenVerifier(runtime.store)).required == login

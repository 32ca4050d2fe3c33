"""The Memories and fact pages in a real headless Chromium that trusts the daemon's CA, against a
real daemon seeded through a real MCP client (fixtures in conftest.py). Screenshots of every
page go to the test-artefact directory."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from conftest import Browser, DashboardDaemon, Tab

from tests.support import free_port

pytestmark = pytest.mark.integration


def test_the_memories_page_lists_the_seeded_store(tab: Tab) -> None:
    response = tab.goto("/")
    assert response.status == 200
    assert tab.page.title().startswith("Memories")
    for name in ("heron", "otter", "mill"):
        assert tab.page.locator(f'a[href="/fact/{tab.daemon.ids[name]}"]').count() == 1
    assert tab.dialogs == [] and tab.foreign == [] and tab.console_errors == []
    tab.shot("memories")


def test_a_search_finds_a_fact_and_shows_its_score_per_signal(tab: Tab) -> None:
    tab.goto("/")
    tab.page.fill("#q", "grey heron nests")
    tab.page.press("#q", "Enter")
    tab.page.wait_for_url(re.compile(r"q=grey\+heron\+nests"))
    first = tab.page.locator("tr.memory").first
    assert first.locator("a.fact-link").get_attribute("href") == f"/fact/{tab.daemon.ids['heron']}"
    for signal in ("text", "vector", "graph", "age", "confidence"):
        assert first.locator(f".breakdown th:text-is('{signal}')").count() == 1
    tab.shot("memories-search")


def test_the_fact_page_shows_text_links_and_the_supersede_chain(tab: Tab) -> None:
    ids = tab.daemon.ids
    assert tab.goto(f"/fact/{ids['kettle_old']}").status == 200
    assert "floor 2" in tab.page.inner_text("pre.content")
    assert tab.page.locator(f'.chain a[href="/fact/{ids["kettle_new"]}"]').count() == 1
    assert "superseded by" in tab.page.inner_text("dl.facts")
    tab.shot("fact-superseded")
    tab.goto(f"/fact/{ids['heron']}")
    assert tab.page.locator(f'table.links a[href="/fact/{ids["mill"]}"]').count() == 1
    assert tab.console_errors == []
    tab.shot("fact")


def test_hostile_text_renders_inert_on_every_page(tab: Tab) -> None:
    hostile = tab.daemon.ids["hostile"]
    for path in ("/", "/?q=hostile+heron", f"/fact/{hostile}"):
        tab.goto(path)
        tab.page.wait_for_load_state("networkidle")
        body = tab.page.inner_text("main")
        assert '<script>alert("xss")</script>' in body  # shown as text
        assert tab.page.locator("main script, main img[src='x'], main a[href^='javascript:']").count() == 0
    assert tab.dialogs == []
    assert tab.foreign == [], tab.foreign
    tab.shot("fact-hostile")


def test_the_pages_read_with_javascript_off(dashboard_browser: Browser) -> None:
    context = dashboard_browser.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(dashboard_browser.daemon.url("/?q=otter"))
        assert "otter family" in page.inner_text("main")
    finally:
        context.close()


def test_forgetting_from_the_fact_page_removes_it_from_mcp_recall(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon = make_dashboard_daemon()
    otter = daemon.ids["otter"]
    assert otter in daemon.recall_ids("otter family bridge")
    tab = browser_for(daemon).tab()
    try:
        tab.goto(f"/fact/{otter}")
        tab.page.click("#forget")
        tab.page.wait_for_url(re.compile(r"done=forgotten"))
        assert "was forgotten" in tab.page.inner_text("main")
        tab.shot("memories-after-forget")
    finally:
        tab.close()
    assert otter not in daemon.recall_ids("otter family bridge")


def test_a_cross_origin_form_post_is_refused_and_changes_nothing(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon = make_dashboard_daemon()
    otter = daemon.ids["otter"]
    tab = browser_for(daemon).tab()
    try:
        tab.goto("/")  # the browser holds the CSRF cookie: SameSite=Strict keeps it home
        tab.page.goto("about:blank")
        tab.page.set_content(f'<form id="f" method="post" action="{daemon.url(f"/fact/{otter}/forget")}">'
                             '<input name="csrf" value="guessed-token"></form>')
        with tab.page.expect_navigation() as navigation:
            tab.page.evaluate("document.getElementById('f').submit()")
        assert navigation.value.status == 403
        tab.shot("refused-cross-origin")
    finally:
        tab.close()
    assert otter in daemon.recall_ids("otter family bridge")


def test_a_get_to_an_action_changes_nothing(tab: Tab) -> None:
    heron = tab.daemon.ids["heron"]
    for action in ("forget", "feedback", "relate", "unrelate", "supersede"):
        assert tab.goto(f"/fact/{heron}/{action}?success=false&by={heron}").status == 405
    assert heron in tab.daemon.recall_ids("grey heron nests")


def test_beyond_loopback_a_login_sets_a_strict_session_cookie(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    port = free_port()
    daemon = make_dashboard_daemon(port=port, VELESDB_MEMORY_HTTP_BIND=f"0.0.0.0:{port}",
                                   VELESDB_MEMORY_HTTP_ALLOW_REMOTE="1")
    assert daemon.token
    tab = browser_for(daemon).tab()
    try:
        tab.goto("/")
        assert tab.page.url.startswith(daemon.url("/login"))
        tab.shot("login")
        tab.page.fill("#token", "vm_wrong")
        tab.page.click("form.login button")
        assert "unknown or revoked" in tab.page.inner_text("main")
        tab.page.fill("#token", daemon.token)
        tab.page.click("form.login button")
        tab.page.wait_for_url(daemon.url("/"))
        assert tab.page.locator(f'a[href="/fact/{daemon.ids["heron"]}"]').count() == 1
        session = [c for c in tab.context.cookies() if "session" in c["name"]]
        assert len(session) == 1, tab.context.cookies()
        cookie = session[0]
        assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
        assert cookie["name"].startswith("__Host-")
    finally:
        tab.close()

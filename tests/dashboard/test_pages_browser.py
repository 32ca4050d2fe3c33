"""The Why, Status, Consolidation and Savings pages in a real headless Chromium that trusts the
daemon's CA, against a real daemon seeded through a real MCP client (fixtures in conftest.py):
the why page draws the demo's tickets at hop 2 and moves between hops with the keyboard, reads
with JavaScript off; consolidation is previewed, applied and undone by clicking; each page is
screenshotted into the test-artefact directory."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from conftest import Browser, DashboardDaemon, Tab

from tests.support import wait_for
from velesmem.agents.demo import CHAINS, UNRELATED

pytestmark = pytest.mark.integration

AUTOGRAPH_DEADLINE_S = 60.0


def seed_demo(daemon: DashboardDaemon) -> dict[str, dict[str, str]]:
    """The demo's two chains (``velesmem.agents.demo``), the first linked with relate, the second
    only by the identifiers its facts share; returns to when the autograph linked them."""
    ids: dict[str, dict[str, str]] = {}
    for chain in CHAINS:
        ids[chain.ticket_name] = {role: daemon.call("remember", fact=getattr(chain, role))["id_str"]
                                  for role in ("ticket", "pr", "decision")}
        for src, relation, dst in chain.relations:
            daemon.call("relate", **{"from": ids[chain.ticket_name][src],
                                     "to": ids[chain.ticket_name][dst], "relation": relation})
    for fact in UNRELATED:
        daemon.call("remember", fact=fact)

    def linked() -> bool:
        walk = daemon.call("why", decision=CHAINS[1].question)
        return any(n["id_str"] == ids[CHAINS[1].ticket_name]["ticket"] for n in walk["nodes"])

    wait_for(linked, AUTOGRAPH_DEADLINE_S, "the autograph linking the second chain")
    return ids


@pytest.fixture
def demo_daemon(make_dashboard_daemon: Callable[..., DashboardDaemon]
                ) -> tuple[DashboardDaemon, dict[str, dict[str, str]]]:
    daemon = make_dashboard_daemon(VELESDB_MEMORY_AUTOGRAPH="identifiers")
    return daemon, seed_demo(daemon)


def test_the_why_page_draws_each_demo_ticket_at_hop_two(
        demo_daemon: tuple[DashboardDaemon, dict[str, dict[str, str]]],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon, ids = demo_daemon
    tab = browser_for(daemon).tab()
    try:
        for n, chain in enumerate(CHAINS):
            tab.goto("/why")
            tab.page.fill("#q", chain.question)
            tab.page.press("#q", "Enter")
            tab.page.wait_for_selector("svg.why-graph")
            chain_ids = ids[chain.ticket_name]
            for role, hop in (("decision", "0"), ("pr", "1"), ("ticket", "2")):
                node = tab.page.locator(f'svg.why-graph a.why-node[data-id="{chain_ids[role]}"]')
                assert node.get_attribute("data-hop") == hop, (chain.ticket_name, role)
                assert node.is_visible()
            ticket = tab.page.locator(f'a.why-node[data-id="{chain_ids["ticket"]}"]')
            assert chain.ticket_name in (ticket.text_content() or "")
            labels = tab.page.locator("svg.why-graph text.why-label").all_text_contents()
            shown = " | ".join(labels)  # relations between the same two facts share a label
            if chain.relations:
                assert "implemented_by" in shown and "fixes" in shown, labels
            else:
                assert "via " in shown, labels
            tab.shot(f"why-demo-{n + 1}")
        assert tab.dialogs == [] and tab.foreign == [] and tab.console_errors == []
    finally:
        tab.close()


def test_a_walk_of_fifty_facts_is_drawn_without_overlap(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon = make_dashboard_daemon(VELESDB_MEMORY_AUTOGRAPH="off")
    hop1 = []
    for i in range(9):  # 9 facts at hop 1, each leading to 4 or 5 at hop 2: 50 with the seed
        leaves = [daemon.call("remember", fact=f"finding {i}.{j}: sensor {i} drifted by {j} "
                              f"degrees during the night shift")["id_str"]
                  for j in range(5 if i < 4 else 4)]
        hop1.append(daemon.call("remember", fact=f"cause {i}: the calibration job {i} skipped "
                                "its reference run", links=[
                                    {"target": leaf, "relation": "explains"} for leaf in leaves]
                                )["id_str"])
    daemon.call("remember", fact="the kiln thermometer readings cannot be trusted this week",
                links=[{"target": h, "relation": "because"} for h in hop1])
    tab = browser_for(daemon).tab()
    try:
        tab.goto("/why?q=kiln+thermometer+readings+trusted")
        nodes = tab.page.locator("svg.why-graph a.why-node rect")
        assert nodes.count() == 50
        boxes = [nodes.nth(i).bounding_box() for i in range(50)]
        for i, a in enumerate(boxes):
            assert a is not None and a["width"] > 150  # drawn at full size, not shrunk
            for b in boxes[i + 1:]:
                assert b is not None
                apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                         or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
                assert apart, (a, b)
        tab.shot("why-50-facts")
    finally:
        tab.close()


def test_the_why_graph_moves_between_hops_with_the_keyboard(
        demo_daemon: tuple[DashboardDaemon, dict[str, dict[str, str]]],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon, ids = demo_daemon
    chain_ids = ids[CHAINS[0].ticket_name]
    tab = browser_for(daemon).tab()
    page = tab.page
    try:
        tab.goto("/why?q=" + CHAINS[0].question.replace(" ", "+"))
        page.wait_for_selector("svg.why-graph")
        page.focus(f'a.why-node[data-id="{chain_ids["decision"]}"]')

        def focused() -> str:
            return str(page.evaluate("document.activeElement.getAttribute('data-id')"))

        page.keyboard.press("ArrowRight")
        assert focused() == chain_ids["pr"]
        page.keyboard.press("ArrowRight")
        assert focused() == chain_ids["ticket"]
        page.keyboard.press("ArrowLeft")
        assert focused() == chain_ids["pr"]
        page.keyboard.press("Tab")  # Tab follows hop order too
        assert focused() != chain_ids["decision"]
        page.focus(f'a.why-node[data-id="{chain_ids["ticket"]}"]')
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(rf"/fact/{chain_ids['ticket']}$"))
        assert "EPIC-317" in page.inner_text("main")
        assert tab.console_errors == []
    finally:
        tab.close()


def test_the_why_page_reads_with_javascript_off(dashboard_browser: Browser) -> None:
    daemon = dashboard_browser.daemon
    context = dashboard_browser.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(daemon.url("/why?q=grey+heron+nests"))
        assert page.locator("svg.why-graph a.why-node").count() >= 2
        heron = page.locator(f'a.why-node[data-id="{daemon.ids["heron"]}"]')
        assert heron.get_attribute("data-hop") == "0"
        assert "hop 1" in page.inner_text("ol.why-hops")
        heron.click()  # a plain SVG link: no script needed
        page.wait_for_url(re.compile(rf"/fact/{daemon.ids['heron']}$"))
    finally:
        context.close()


def test_the_status_page_renders_for_the_seeded_store(tab: Tab) -> None:
    assert tab.goto("/status").status == 200
    assert tab.page.inner_text("#state") in ("ready", "warming")
    assert int(tab.page.inner_text("#fact-count").replace(",", "")) >= 6
    main = tab.page.inner_text("main")
    for heading in ("Daemon", "Store", "Embedder and spaces", "Jobs", "Sessions and clients",
                    "Recent warnings and errors"):
        assert heading in main
    assert tab.dialogs == [] and tab.foreign == [] and tab.console_errors == []
    tab.shot("status")


def test_the_savings_page_plots_what_compile_context_saved(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon = make_dashboard_daemon()
    for _ in range(2):
        daemon.call("compile_context", query="heron", token_budget=10, project="birds",
                    fragments=[{"content": "the heron waits by the weir " * 60, "kind": "text"}])
    saved = daemon.call("context_savings", project="birds")
    tab = browser_for(daemon).tab()
    try:
        tab.goto("/savings?project=birds")
        assert tab.page.inner_text("#events") == "2"
        assert tab.page.inner_text("#tokens-saved") == f"{saved['tokens_saved']:,}"
        assert tab.page.locator("svg.plot rect.plot-bar").count() == 1
        assert tab.console_errors == []
        tab.shot("savings")
    finally:
        tab.close()


def test_consolidation_is_previewed_applied_and_undone_in_the_browser(
        make_dashboard_daemon: Callable[..., DashboardDaemon],
        browser_for: Callable[[DashboardDaemon], Browser]) -> None:
    daemon = make_dashboard_daemon()
    group = [daemon.call("remember", fact=text)["id_str"] for text in (
        "The rate limiter allows 600 requests per minute per key",
        "Rate limiter: 600 requests each minute for every API key",
        "600 requests a minute per key is the rate limit")]
    for member in group[1:]:
        daemon.call("relate", **{"from": member, "to": group[0], "relation": "duplicate_of"})

    def listed() -> set[str]:
        return {m["id_str"] for m in daemon.call("list_memories", limit=100)["memories"]}

    before = listed()
    tab = browser_for(daemon).tab()
    page = tab.page
    try:
        tab.goto("/consolidation")
        page.click("#preview")
        page.wait_for_selector("#preview-count")
        assert page.inner_text("#preview-count").startswith("2 fact(s) would be archived")
        assert listed() == before  # a preview changes nothing
        tab.shot("consolidation-preview")
        page.click("#apply")
        page.wait_for_url(re.compile(r"done=applied"))
        assert "The run was applied." in page.inner_text("main")
        assert listed() == before - set(group[:2])  # the two older members archived
        tab.shot("consolidation-applied")
        page.click("button.undo")
        page.wait_for_url(re.compile(r"done=undone"))
        assert "The run was undone." in page.inner_text("main")
        assert listed() == before
        assert page.locator("button.undo").count() == 0
        tab.shot("consolidation-undone")
        assert tab.dialogs == [] and tab.foreign == [] and tab.console_errors == []
    finally:
        tab.close()

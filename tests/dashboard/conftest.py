"""Fixtures for the dashboard's browser tests: a real daemon (``velesdb-memory --http`` as a
subprocess, TLS from its own CA) with a store seeded through a real MCP client, and a real
headless Chromium — Debian's ``chromium`` (``.ci/run`` installs it) driven by Playwright — that
TRUSTS the daemon's CA: the CA is added with ``certutil`` to the NSS database of a temp HOME the
browser runs with (no ``ignore_https_errors``).

- ``dashboard_daemon`` (module): one seeded daemon for tests that only read;
  ``make_dashboard_daemon(**env)`` a fresh seeded one for tests that change the store or the
  auth settings (bound beyond loopback, or with ``HTTP_AUTH=token``, it gets a bearer token,
  created before it starts, used by its MCP calls: ``daemon.token``).
- ``dashboard_browser`` (module): Chromium trusting ``dashboard_daemon``'s CA;
  ``browser_for(daemon)`` one trusting another daemon's CA.
- ``tab``: a fresh browser context and page on ``dashboard_browser`` that records JavaScript
  dialogs, requests to any origin but the daemon's, and console errors (CSP violations are
  reported there); ``tab.shot(name)`` saves a screenshot under the artefact directory
  (``$VELESMEM_TEST_ARTEFACTS``, else ``tests/artefacts/``, git-ignored).

Every test using them starts processes: mark it ``integration``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.support import free_port, require_module, wait_for
from tests.support.modules import missing
from velesmem.daemon.tls import client_ssl_context

CHROMIUM = os.environ.get("VELESMEM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTEFACTS = Path(os.environ.get("VELESMEM_TEST_ARTEFACTS")
                 or Path(__file__).resolve().parents[1] / "artefacts")
START_DEADLINE_S = 60.0
HOSTILE_TEXT = ('hostile note: <script>alert("xss")</script> and <img src=x onerror="alert(2)"> '
                'and <a href="javascript:alert(3)">a javascript: link</a> about the heron')

# The seeded store: name → (text, metadata). Relations and the supersede pair are added after.
SEED: dict[str, tuple[str, dict[str, Any]]] = {
    "heron": ("The grey heron nests by the old mill on the river Weir", {"project": "birds"}),
    "otter": ("An otter family lives under the stone bridge", {"project": "mammals"}),
    "mill": ("The old mill on the river Weir was restored in 1998", {"project": "birds"}),
    "kettle_old": ("The team kettle lives in the kitchen on floor 2", {"project": "office"}),
    "kettle_new": ("The team kettle moved to the kitchen on floor 3", {"project": "office"}),
    "hostile": (HOSTILE_TEXT, {"project": "security", "note": "<b>not bold</b>"}),
}
RELATIONS = (("heron", "mill", "near"), ("kettle_new", "kettle_old", "supersedes"))


def _env(root: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env.update(HOME=str(root / "home"), PYTHONUNBUFFERED="1", VELESDB_MEMORY_EMBEDDER="hash",
               VELESDB_MEMORY_PATH=str(root / "store"), VELESDB_MEMORY_TLS_DIR=str(root / "tls"),
               VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}")
    env.update(extra)
    return env


@dataclass
class DashboardDaemon:
    """A running daemon with a seeded store: ``ids`` maps the SEED names to their id strings."""

    root: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    ids: dict[str, str] = field(default_factory=dict)
    token: str | None = None  # set when the daemon requires one (beyond loopback, HTTP_AUTH=token)

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return Path(self.env["VELESDB_MEMORY_TLS_DIR"]) / "ca-cert.pem"

    @property
    def log(self) -> Path:
        return self.root / "daemon.log"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def start(self) -> DashboardDaemon:
        import httpx

        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http"],
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

        def healthy() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited:\n{self.log.read_text(errors='replace')}")
            if not self.ca.exists():
                return False
            try:
                r = httpx.get(self.url("/health"), verify=client_ssl_context(self.ca), timeout=2)
            except (httpx.HTTPError, OSError):
                return False
            return r.status_code == 200 and r.json().get("status") == "ok"

        wait_for(healthy, START_DEADLINE_S, f"daemon /health on {self.base}")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """One MCP tool call through a real MCP client over TLS (the bearer token if any), on a
        thread of its own: Playwright's sync API keeps an event loop running on this one."""
        async def go() -> dict[str, Any]:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
            transport = StreamableHttpTransport(self.url("/mcp"), headers=headers,
                                                verify=client_ssl_context(self.ca))
            async with Client(transport) as client:
                result = await client.call_tool(tool, arguments)
                return dict(result.structured_content or {})
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, go()).result(timeout=120)

    def recall_ids(self, query: str, k: int = 10) -> list[str]:
        return [m["id_str"] for m in self.call("recall", query=query, k=k)["memories"]]

    def seed(self) -> DashboardDaemon:
        for name, (text, metadata) in SEED.items():
            self.ids[name] = self.call("remember", fact=text, metadata=metadata)["id_str"]
        for src, dst, relation in RELATIONS:
            self.call("relate", **{"from": self.ids[src], "to": self.ids[dst],
                                   "relation": relation})
        return self


def _create_token(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "velesmem", "token", "create", "--name", "browser"],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.splitlines()[0].strip()


def _launch(root: Path, port: int, **extra: str) -> DashboardDaemon:
    (root / "home").mkdir(parents=True, exist_ok=True)
    env = _env(root, port, **extra)
    remote = not env["VELESDB_MEMORY_HTTP_BIND"].startswith("127.0.0.1:")
    needs_token = remote or extra.get("VELESDB_MEMORY_HTTP_AUTH") == "token"
    token = _create_token(env) if needs_token else None
    daemon = DashboardDaemon(root, port, env, token=token)
    try:
        return daemon.start().seed()
    except BaseException:
        daemon.stop()
        raise


@pytest.fixture(scope="module")
def dashboard_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardDaemon]:
    daemon = _launch(tmp_path_factory.mktemp("dashboard-daemon"), free_port())
    yield daemon
    daemon.stop()


@pytest.fixture
def make_dashboard_daemon(tmp_path_factory: pytest.TempPathFactory
                          ) -> Iterator[Callable[..., DashboardDaemon]]:
    made: list[DashboardDaemon] = []

    def make(port: int | None = None, **env: str) -> DashboardDaemon:
        daemon = _launch(tmp_path_factory.mktemp("dashboard-daemon"), port or free_port(), **env)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.stop()


@dataclass
class Browser:
    """A Chromium whose HOME's NSS database trusts one daemon's CA."""

    browser: Any  # playwright.sync_api.Browser
    daemon: DashboardDaemon

    def tab(self) -> Tab:
        context = self.browser.new_context()
        return Tab(context, context.new_page(), self.daemon)


@dataclass
class Tab:
    """One browser context and page, with what it saw: dialogs, requests to other origins,
    console errors."""

    context: Any  # playwright.sync_api.BrowserContext
    page: Any  # playwright.sync_api.Page
    daemon: DashboardDaemon
    dialogs: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        def on_request(request: Any) -> None:
            if not request.url.startswith(self.daemon.base + "/") and \
                    not request.url.startswith(("data:", "about:")):
                self.foreign.append(request.url)

        self.page.on("dialog", on_dialog)
        self.page.on("request", on_request)
        def on_console(message: Any) -> None:
            if message.type == "error":
                self.console_errors.append(message.text)

        self.page.on("console", on_console)

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.daemon.url(path))
        assert response is not None
        return response

    def shot(self, name: str) -> Path:
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTEFACTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=True)
        return target

    def close(self) -> None:
        self.context.close()


def _chromium() -> str:
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        missing(f"{CHROMIUM} is not installed (Debian: apt-get install chromium)")
    if not shutil.which("certutil"):
        missing("certutil is not installed (Debian: apt-get install libnss3-tools)")
    return CHROMIUM


def _trusting_home(root: Path, ca: Path) -> Path:
    """A HOME whose NSS database (what Chromium on Linux reads) trusts ``ca``."""
    nssdb = root / ".pki" / "nssdb"
    nssdb.mkdir(parents=True)
    subprocess.run(["certutil", "-d", f"sql:{nssdb}", "-N", "--empty-password"], check=True,
                   capture_output=True, timeout=60)
    subprocess.run(["certutil", "-d", f"sql:{nssdb}", "-A", "-t", "C,,", "-n", "velesmem-test",
                    "-i", str(ca)], check=True, capture_output=True, timeout=60)
    return root


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in this thread
# while it is open, and every async test run after it in the same session would then fail
# ("Cannot run the event loop while another loop is running").
@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Any]:
    require_module("playwright", "playwright is not installed; pip install -e '.[test]'")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@pytest.fixture
def browser_for(playwright_driver: Any, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[Callable[[DashboardDaemon], Browser]]:
    """Factory: a Chromium trusting ``daemon``'s CA (closed after the test)."""
    opened: list[Any] = []

    def launch(daemon: DashboardDaemon) -> Browser:
        home = _trusting_home(tmp_path_factory.mktemp("chromium-home"), daemon.ca)
        browser = playwright_driver.chromium.launch(
            executable_path=_chromium(), args=CHROMIUM_ARGS, headless=True,
            env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        opened.append(browser)
        return Browser(browser, daemon)

    yield launch
    for browser in opened:
        browser.close()


@pytest.fixture(scope="module")
def dashboard_browser(playwright_driver: Any, dashboard_daemon: DashboardDaemon,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    home = _trusting_home(tmp_path_factory.mktemp("chromium-home"), dashboard_daemon.ca)
    browser = playwright_driver.chromium.launch(
        executable_path=_chromium(), args=CHROMIUM_ARGS, headless=True,
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    yield Browser(browser, dashboard_daemon)
    browser.close()


@pytest.fixture
def tab(dashboard_browser: Browser) -> Iterator[Tab]:
    opened = dashboard_browser.tab()
    yield opened
    opened.close()

"""Shared test configuration: keep every test away from the user's real store, CA, client configs
and installer record, and provision the pinned Node tools the tests drive (``npm ci`` in
tests/node when they are missing), so the README's test command needs nothing installed by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.memory import MemoryService

NODE_DIR = Path(__file__).resolve().parent / "node"
NPM_CI_TIMEOUT_S = 300.0
# Where a user's per-user files live besides HOME: the installer record, client configs.
USER_DIR_VARS = ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEX_HOME")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HOME and the VELESDB_MEMORY_* paths at a temp dir so no test touches ~/."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("VELESDB_MEMORY_") or name in USER_DIR_VARS:
            monkeypatch.delenv(name)
    # The offline hash embedder unless a test asks for another: fast and deterministic. (A new
    # store's default, `local` when velesmem[embed] is installed, has tests of its own.)
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")


# --- the memory engine on a temp store, with a clock the test moves --------------------------
START = 1_780_000_000.0  # 2026-05-28 UTC


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def settings() -> Settings:
    return Settings.from_env({"VELESDB_MEMORY_EMBEDDER": "hash"})


@pytest.fixture
def mem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    service = MemoryService.open(store_dir, clock=clock, settings=settings)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def vmem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    """A service ranking by vector similarity only (recall_mode=vector)."""
    service = MemoryService.open(store_dir, clock=clock,
                                 settings=settings.with_overrides(recall_mode="vector"))
    try:
        yield service
    finally:
        service.close()
def _node_modules_current() -> bool:
    """The pinned packages of tests/node/package.json are installed at their pinned versions."""
    wanted = json.loads((NODE_DIR / "package.json").read_text("utf-8")).get("dependencies", {})
    for name, version in wanted.items():
        installed = NODE_DIR / "node_modules" / name / "package.json"
        try:
            if json.loads(installed.read_text("utf-8")).get("version") != version:
                return False
        except (OSError, ValueError):
            return False
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    """``npm ci`` in tests/node once, when its pinned packages are missing (a fresh clone)."""
    if not (NODE_DIR / "package-lock.json").is_file() or _node_modules_current():
        return
    npm = shutil.which("npm")
    if npm is None:
        print("tests/node: npm is not installed, so mcp-remote is not either; the tests that run it "
              "will say so (.ci/run installs Node)", file=sys.stderr)
        return
    print("tests/node: installing the pinned Node packages (npm ci)…", file=sys.stderr, flush=True)
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        print(f"tests/node: npm ci failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}",
              file=sys.stderr)

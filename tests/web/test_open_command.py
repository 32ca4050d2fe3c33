"""``velesdb-memory open`` / ``dashboard``: the dashboard's URL printed, and handed to the
default browser (``$BROWSER``, which Python's webbrowser module honours) unless ``--print``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def run(tmp_path: Path, *argv: str, browser: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env["HOME"] = str(tmp_path)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    if browser is not None:
        env["BROWSER"] = str(browser)
    return subprocess.run([sys.executable, "-m", "velesmem", *argv], env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def fake_browser(tmp_path: Path) -> tuple[Path, Path]:
    """A 'browser' that writes the URL it was given to a file."""
    seen = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{seen}"\n')
    script.chmod(0o755)
    return script, seen


def test_open_prints_the_url_and_hands_it_to_the_default_browser(tmp_path: Path) -> None:
    script, seen = fake_browser(tmp_path)
    done = run(tmp_path, "open", "--port", "18123", browser=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "https://127.0.0.1:18123/"
    assert seen.read_text() == "https://127.0.0.1:18123/"


def test_print_only_prints_and_dashboard_is_an_alias(tmp_path: Path) -> None:
    script, seen = fake_browser(tmp_path)
    done = run(tmp_path, "dashboard", "--print", "--port", "18124", browser=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "https://127.0.0.1:18124/\n"
    assert not seen.exists()

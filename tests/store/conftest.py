"""Fixtures for the store tests: run Python snippets in a child process against a store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture
def spawn(child_env: dict[str, str]):
    """Start ``python -c code`` with the repo importable; stdout/stderr piped, text mode. After
    the test each child is killed if still running, reaped, and its pipes closed."""
    started: list[subprocess.Popen] = []

    def start(code: str, *args: str, **kw) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", code, *args], env=child_env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

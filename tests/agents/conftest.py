"""Fixtures for the agent tests: the live tool surface, and real daemons started with the
daemon tests' helpers (their directory is put on sys.path here)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "daemon"))

from daemon_helpers import Daemon, clean_env, free_port  # noqa: E402

SAMPLES = HERE / "samples"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _daemon_env(root: Path, port: int, **extra: str) -> dict[str, str]:
    (root / "home").mkdir(exist_ok=True)
    env = clean_env(root / "home", VELESDB_MEMORY_PATH=str(root / "store"),
                    VELESDB_MEMORY_TLS_DIR=str(root / "tls"),
                    VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One running daemon for a test module (each test uses its own project names)."""
    root = tmp_path_factory.mktemp("hook-daemon")
    port = free_port()
    running = Daemon(root=root, port=port, env=_daemon_env(root, port)).start()
    yield running
    running.stop()


@pytest.fixture
def make_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Daemon]]:
    """A Daemon factory (not started) with its own store and TLS dirs; killed at the end."""
    made: list[Daemon] = []

    def make(**extra: str) -> Daemon:
        root = tmp_path_factory.mktemp("daemon")
        port = free_port()
        made.append(Daemon(root=root, port=port, env=_daemon_env(root, port, **extra)))
        return made[-1]

    yield make
    for d in made:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()

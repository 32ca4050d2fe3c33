"""Fixtures for the daemon tests (helpers live in daemon_helpers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from daemon_helpers import Daemon, clean_env, free_port


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Daemon]]:
    """Factory: ``make_daemon(**env)`` → a Daemon (not started) with its own store and TLS dirs."""
    made: list[Daemon] = []

    def make(root: Path | None = None, port: int | None = None, nofile: int | None = None, **extra: str) -> Daemon:
        root = root or tmp_path_factory.mktemp("daemon")
        port = port or free_port()
        env = clean_env(
            root / "home",
            VELESDB_MEMORY_PATH=str(root / "store"),
            VELESDB_MEMORY_TLS_DIR=str(root / "tls"),
            VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}",
        )
        (root / "home").mkdir(exist_ok=True)
        env.update(extra)
        daemon = Daemon(root=root, port=port, env=env, nofile=nofile)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()


@pytest.fixture(scope="session")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One running daemon shared by every test that neither stops nor reconfigures it."""
    root = tmp_path_factory.mktemp("shared-daemon")
    (root / "home").mkdir()
    port = free_port()
    env = clean_env(
        root / "home",
        VELESDB_MEMORY_PATH=str(root / "store"),
        VELESDB_MEMORY_TLS_DIR=str(root / "tls"),
        VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}",
    )
    daemon = Daemon(root=root, port=port, env=env).start()
    yield daemon
    daemon.stop()



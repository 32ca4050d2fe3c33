"""Fixtures for the MCP-layer tests: a real MemoryService on a temp store, and the real server.

Helpers (schema walking, sample arguments, probes) live in ``mcp_helpers.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.mcp.app import AppContext
from velesmem.mcp.server import build_server
from tests.support.mcp_memory import InMemoryTransport, in_memory


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[AppContext]:
    """A real MemoryService (hash embedder, SQLite + FAISS) on a fresh temp store."""
    import velesmem

    settings = Settings.from_env().with_overrides(path=tmp_path / "store")
    runtime = velesmem.open(settings.path, settings=settings)
    try:
        yield AppContext(runtime)
    finally:
        runtime.close()


@pytest.fixture
def server(app: AppContext) -> InMemoryTransport:
    """The real server, reached in process (``Client(server)`` opens a real MCP session)."""
    return in_memory(build_server(app))

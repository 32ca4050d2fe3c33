"""Fixtures of the extractor tests: the scripted chat server (chat_server.py) and a dead port."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from chat_server import ChatServer, serve


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    state, httpd, thread = serve()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture
def closed_port_url() -> str:
    """A URL on which nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"

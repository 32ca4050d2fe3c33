"""What the daemon does on its way to its first answer (bench/cold_start.py times it): it loads no
CLI command, client-catalog, installer or docs code, and no FastMCP (the tool definitions ship
prebuilt, velesmem/mcp/definitions.json); its port listens before the MCP SDK is imported (a
client that connects early waits in the backlog instead of being refused); and it serves with
the garbage collector on again, the start-up heap frozen."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_helpers import Daemon

pytestmark = pytest.mark.integration

# Runs the real entry point (velesmem.cli.main) in this process, with two observers of its own:
# an import hook noting whether the port already accepts connections when the MCP SDK is first
# imported, and a thread that, once /health answers over TLS, writes what the process holds and
# stops it with SIGINT, as an operator would.
PROBE = r"""
import gc, json, os, signal, socket, ssl, sys, threading, time
from pathlib import Path

port = int(os.environ["VELESDB_MEMORY_HTTP_BIND"].rsplit(":", 1)[1])
ca = Path(os.environ["VELESDB_MEMORY_TLS_DIR"]) / "ca-cert.pem"
seen = {}

class FirstSdkImport:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" and "listening_before_sdk" not in seen:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                seen["listening_before_sdk"] = True
            except OSError:
                seen["listening_before_sdk"] = False
        return None

sys.meta_path.insert(0, FirstSdkImport())

def health() -> bool:
    try:
        context = ssl.create_default_context(cafile=str(ca))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
            return tls.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

def observe() -> None:
    deadline = time.monotonic() + 60
    while not health() and time.monotonic() < deadline:
        time.sleep(0.02)
    seen.update(modules=sorted(sys.modules), gc_enabled=gc.isenabled(), frozen=gc.get_freeze_count())
    Path(sys.argv[1]).write_text(json.dumps(seen))
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=observe, daemon=True).start()
from velesmem.cli import main
sys.exit(main(["--http"]))
"""

# Loaded only by a command that needs them, never by serving.
NOT_SERVED = ("velesmem.agents", "velesmem.clients", "velesmem.service", "velesmem.mcp.docs",
              "velesmem.memory.export")


def _served(make_daemon: Callable[..., Daemon], tmp_path: Path) -> dict:
    daemon = make_daemon()
    out = tmp_path / "seen.json"
    done = subprocess.run([sys.executable, "-c", PROBE, str(out)], env=daemon.env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and out.exists(), done.stdout + done.stderr
    return json.loads(out.read_text())


def test_serving_loads_no_command_client_docs_or_fastmcp_code_and_listens_before_the_sdk(
        make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    seen = _served(make_daemon, tmp_path)
    modules = seen["modules"]
    commands = [m for m in modules if m.startswith("velesmem.cli.") and m != "velesmem.cli._serve"]
    assert not commands, commands
    loaded = [m for m in modules if m.startswith(NOT_SERVED)]
    assert not loaded, loaded
    assert not [m for m in modules if m.split(".")[0] == "fastmcp"]
    assert "mcp.server.lowlevel" in modules  # it did serve MCP, through the SDK
    assert seen["listening_before_sdk"] is True


def test_serving_loads_no_websocket_protocol(make_daemon: Callable[..., Daemon],
                                             tmp_path: Path) -> None:
    modules = _served(make_daemon, tmp_path)["modules"]
    websockets = [m for m in modules
                  if m.split(".")[0] == "websockets" or m.startswith("uvicorn.protocols.websockets")]
    assert not websockets, websockets
    assert "uvicorn" in modules  # it did serve HTTP


def test_the_daemon_serves_with_the_collector_on_and_its_start_up_frozen(
        make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    seen = _served(make_daemon, tmp_path)
    assert seen["gc_enabled"] is True
    assert seen["frozen"] > 10_000  # the start-up heap (the MCP SDK, pydantic, numpy) is frozen

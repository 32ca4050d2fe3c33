"""The stdio transport: serving on its own, attaching to the daemon that holds the store, the lock
error when no daemon answers, and exiting by itself once its parent is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_helpers import Daemon, clean_env, structured, wait_for
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

import velesmem
from tests.support.bounds import record, timed
from velesmem.config import Settings

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PROXY_EXIT_DEADLINE_S = 10.0


def _stdio_client(env: dict[str, str], log: Path) -> Client:
    transport = StdioTransport(sys.executable, ["-m", "velesmem"], env=env, keep_alive=False, log_file=log)
    return Client(transport)


async def test_stdio_serves_its_own_store(tmp_path: Path) -> None:
    env = clean_env(tmp_path, VELESDB_MEMORY_PATH=str(tmp_path / "store"),
                    VELESDB_MEMORY_TLS_DIR=str(tmp_path / "tls"))
    async with _stdio_client(env, tmp_path / "stdio.log") as client:
        saved = structured(await client.call_tool("remember", {"fact": "stdio owns this store"}))
        found = structured(await client.call_tool("recall", {"query": "stdio owns this store", "k": 1}))
    assert found["memories"][0]["id_str"] == saved["id_str"]


async def test_stdio_on_a_locked_store_attaches_to_the_daemon_and_sees_its_facts(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    daemon = make_daemon().start()
    async with daemon.client() as client:
        saved = structured(await client.call_tool("remember", {"fact": "written through the daemon"}))
    log = tmp_path / "attach.log"
    async with _stdio_client(daemon.env, log) as client:
        found = structured(await client.call_tool("recall", {"query": "written through the daemon", "k": 3}))
        assert saved["id_str"] in [m["id_str"] for m in found["memories"]]
        mine = structured(await client.call_tool("remember", {"fact": "written through the attached stdio"}))
    assert "attaching to" in log.read_text() and daemon.url in log.read_text()
    async with daemon.client() as client:
        found = structured(await client.call_tool("recall", {"query": "written through the attached stdio", "k": 3}))
    assert mine["id_str"] in [m["id_str"] for m in found["memories"]]


def test_stdio_on_a_locked_store_without_a_daemon_fails_with_the_lock_error(tmp_path: Path) -> None:
    settings = Settings(path=tmp_path / "store", tls_dir=tmp_path / "tls")
    env = clean_env(tmp_path, VELESDB_MEMORY_PATH=str(settings.path), VELESDB_MEMORY_TLS_DIR=str(settings.tls_dir))
    with velesmem.open(settings=settings).memory:
        done = subprocess.run([sys.executable, "-m", "velesmem"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "lock" in done.stderr.lower() and str(settings.path) in done.stderr, done.stderr


def test_stdio_exits_by_itself_when_its_parent_dies(tmp_path: Path) -> None:
    """The parent spawns the server and dies at once; stdin stays open (we hold its write end), so
    only the orphan watchdog can end it — and the store lock is released."""
    env = clean_env(tmp_path, VELESDB_MEMORY_PATH=str(tmp_path / "store"),
                    VELESDB_MEMORY_TLS_DIR=str(tmp_path / "tls"))
    read_end, write_end = os.pipe()
    pid_file = tmp_path / "child.pid"
    store = tmp_path / "store"
    parent = (  # start the server, wait until it has opened its store, then die without a word
        "import os, subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-m', 'velesmem'], stdin={read_end}, pass_fds=({read_end},),"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "end = time.monotonic() + 20\n"
        f"while not os.path.exists({str(store)!r}) and time.monotonic() < end:\n"
        "    time.sleep(0.02)\n"
    )
    try:
        subprocess.run([sys.executable, "-c", parent], env=env, pass_fds=(read_end,), check=True, timeout=30)
        os.close(read_end)
        child = int(pid_file.read_text())
        settings = Settings(path=tmp_path / "store", tls_dir=tmp_path / "tls")
        assert settings.path.exists()
        wait_for(lambda: not _alive(child), 20, "the orphaned stdio server to exit")
        with timed("stdio: the store opens once the orphaned server has exited", 5.0):
            with velesmem.open(settings=settings).memory:
                pass
    finally:
        os.close(write_end)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_stdio_does_not_attach_to_a_daemon_serving_another_store(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """Our store is locked by someone else while a daemon for a *different* store answers on the
    configured address: attaching would silently use the wrong memory, so the lock error stands."""
    daemon = make_daemon().start()
    settings = Settings(path=tmp_path / "other-store", tls_dir=daemon.tls_dir)
    env = dict(daemon.env, VELESDB_MEMORY_PATH=str(settings.path))
    with velesmem.open(settings=settings).memory:
        done = subprocess.run([sys.executable, "-m", "velesmem"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "serves another store" in done.stderr and "lock" in done.stderr.lower(), done.stderr


def test_attached_stdio_proxy_exits_when_stdin_closes(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    """Like the stdio server, the proxy that attaches to the daemon ends when its client closes
    stdin (it used to stay alive, its stdout writer waiting forever)."""
    daemon = make_daemon().start()
    log = tmp_path / "proxy.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "velesmem"], env=daemon.env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None and proc.stdout is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    try:
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            if "id" in message:
                answer = json.loads(proc.stdout.readline())
                assert answer["id"] == message["id"] and "result" in answer, answer
        proc.stdin.close()
        t0 = time.monotonic()
        code = proc.wait(120)  # stdin closed: it exits by itself
        record("stdio: the attached relay exits after stdin closes", time.monotonic() - t0,
               PROXY_EXIT_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert code == 0, log.read_text()
    assert "attaching to" in log.read_text()


# Serves stdio in this process (the real entry point) with an observer thread that waits until
# the Runtime's warmer runs, then writes the collector's state and what was frozen, and exits.
GC_PROBE = r"""
import gc, json, os, sys, threading, time
from pathlib import Path

def observe() -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = [t.name for t in threading.enumerate()]
        if "velesmem-warm" in names or "velesmem-sweep" in names:
            break
        time.sleep(0.01)
    seen = {"gc_enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
            "server": "velesmem.mcp.server" in sys.modules and "mcp.server.lowlevel" in sys.modules,
            "fastmcp": "fastmcp" in sys.modules}
    Path(sys.argv[1]).write_text(json.dumps(seen))
    os._exit(0)

threading.Thread(target=observe, daemon=True).start()
from velesmem.cli import main
sys.exit(main([], attach=False))
"""


def test_stdio_starts_warming_after_the_server_is_built_with_the_collector_on_and_start_up_frozen(
        tmp_path: Path) -> None:
    env = clean_env(tmp_path, VELESDB_MEMORY_PATH=str(tmp_path / "store"),
                    VELESDB_MEMORY_TLS_DIR=str(tmp_path / "tls"))
    out = tmp_path / "seen.json"
    log = tmp_path / "stdio.log"
    with log.open("wb") as err, subprocess.Popen(
            [sys.executable, "-c", GC_PROBE, str(out)], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=err) as proc:
        proc.wait(timeout=120)  # stdin stays open (no EOF) until the probe exits
    assert proc.returncode == 0 and out.exists(), log.read_text(errors="replace")
    seen = json.loads(out.read_text())
    assert seen["server"] is True  # the MCP server was built before the warmer started
    assert seen["fastmcp"] is False  # serving builds no tool definition: they ship built
    assert seen["gc_enabled"] is True
    assert seen["frozen"] > 10_000  # the start-up heap (the MCP SDK, pydantic, numpy) is frozen

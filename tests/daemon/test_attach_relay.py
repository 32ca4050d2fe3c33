"""The light stdio attach: ``velesdb-memory`` with no arguments relays stdio to a running daemon
(standard library only), driven by the MCP SDK's stdio client; it exits when stdin closes, picks up
a restarted daemon, and exits when the daemon is gone for good."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import LEGACY_INIT, Daemon, free_port, structured, wait_for
from mcp import ClientSession, StdioServerParameters, stdio_client

from velesmem import installed
from velesmem.daemon.tls import prepare_tls
from velesmem.daemon.upstream import (PROTOCOL_HEADER, SESSION_HEADER, Endpoint, Gone, Upstream,
                                      client_ssl_context)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

BENCH = Path(__file__).resolve().parents[2] / "bench"
EXIT_DEADLINE_S = 20.0
HEAVY = ("numpy", "faiss", "onnxruntime", "mcp", "mcp_types", "httpx", "httpx2", "pydantic",
         "anyio", "starlette", "cryptography", "velesmem.runtime", "velesmem.store", "velesmem.cli")


def _params(daemon: Daemon, **extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "velesmem"],
                                 env=dict(daemon.env, **extra), cwd=str(daemon.root))


def _relay(daemon: Daemon, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "velesmem"], env=dict(daemon.env, **extra),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)


def _ask(proc: subprocess.Popen[bytes], message: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    if "id" not in message:
        return {}
    answer = json.loads(proc.stdout.readline())
    assert answer.get("id") == message["id"], answer
    return answer


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


async def test_the_sdk_stdio_client_works_through_the_relay(make_daemon: Callable[..., Daemon],
                                                            tmp_path: Path) -> None:
    daemon = make_daemon().start()
    with open(tmp_path / "relay.log", "w") as errlog:
        async with stdio_client(_params(daemon), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                assert info.server_info.name == "velesdb-memory"
                names = {tool.name for tool in (await session.list_tools()).tools}
                assert {"remember", "recall", "why"} <= names
                saved = await session.call_tool("remember", {"fact": "relayed by the light attach"})
                id_str = saved.structured_content["id_str"]
                found = await session.call_tool("recall", {"query": "relayed by the light attach", "k": 3})
                assert id_str in [m["id_str"] for m in found.structured_content["memories"]]
    said = (tmp_path / "relay.log").read_text()
    assert f"attaching to {daemon.url}" in said, said
    async with daemon.client() as client:  # the daemon's own store has it
        seen = structured(await client.call_tool("recall", {"query": "relayed by the light attach", "k": 3}))
    assert id_str in [m["id_str"] for m in seen["memories"]]


async def test_a_client_of_another_store_serves_it_instead_of_attaching(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """The daemon answers on the configured address but for another store: the stdio process
    opens its own store (attaching would silently use the wrong memory), without a warning."""
    daemon = make_daemon().start()
    mine = tmp_path / "my-store"
    log = tmp_path / "stdio.log"
    with open(log, "w") as errlog:
        async with stdio_client(_params(daemon, VELESDB_MEMORY_PATH=str(mine)), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                saved = await session.call_tool("remember", {"fact": "kept in my own store"})
                assert not saved.is_error, saved
    said = log.read_text()
    assert "attaching to" not in said and "serves another store" not in said, said
    assert mine.is_dir()
    async with daemon.client() as client:
        seen = structured(await client.call_tool("list_memories", {}))
    assert seen["memories"] == []


def test_the_relay_exits_0_when_stdin_closes(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    daemon = make_daemon().start()
    proc = _relay(daemon, tmp_path / "relay.log")
    try:
        assert "result" in _ask(proc, LEGACY_INIT)
        _ask(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert "tools" in _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(EXIT_DEADLINE_S) == 0, (tmp_path / "relay.log").read_text()
    finally:
        _end(proc)


def test_a_call_sent_just_before_stdin_closes_is_still_answered(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """``printf '…' | velesdb-memory``: stdin is at EOF while the call is in flight; the relay
    waits for its answer before it ends the session."""
    daemon = make_daemon().start()
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"fact": "sent as stdin closed"}}}
    lines = [LEGACY_INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]
    done = subprocess.run([sys.executable, "-m", "velesmem"], env=daemon.env, capture_output=True,
                          input="".join(json.dumps(m) + "\n" for m in lines).encode(), timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert answers[2]["result"]["structuredContent"]["id_str"], answers


def test_the_relay_answers_a_2026_discover_probe_with_method_not_found(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """So a client that probes first falls back to the initialize handshake the relay replays."""
    daemon = make_daemon().start()
    proc = _relay(daemon, tmp_path / "relay.log")
    try:
        probe = _ask(proc, {"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {}})
        assert probe["error"]["code"] == -32601
        assert "result" in _ask(proc, LEGACY_INIT)
    finally:
        _end(proc)


async def test_a_call_after_the_daemon_restarts_succeeds(make_daemon: Callable[..., Daemon],
                                                        tmp_path: Path) -> None:
    """The daemon is stopped and started again on the same port while the client stays attached:
    the relay replays the handshake for a new session and the client's next call goes through."""
    daemon = make_daemon().start()
    log = tmp_path / "relay.log"
    with open(log, "w") as errlog:
        async with stdio_client(_params(daemon), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                before = await session.call_tool("remember", {"fact": "written before the restart"})
                assert daemon.stop() == 0
                daemon.start()
                after = await session.call_tool("remember", {"fact": "written after the restart"})
                assert not after.is_error, after
                found = await session.call_tool("recall", {"query": "written before the restart", "k": 3})
                ids = [m["id_str"] for m in found.structured_content["memories"]]
                assert before.structured_content["id_str"] in ids
    assert "reconnected to" in log.read_text(), log.read_text()


async def test_the_relay_follows_a_restarted_daemon_to_the_port_the_installer_record_names(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    """The client's environment names no port: the relay finds the daemon through the installer
    record, and after the daemon comes back on another port (the installer re-run with --port)
    it finds it there again."""
    daemon = make_daemon().start()
    env = {k: v for k, v in daemon.env.items() if k != "VELESDB_MEMORY_HTTP_BIND"}
    record = Path(str(installed.record_path(env)))

    def record_port(port: int) -> None:
        installed.write(installed.Record(settings={"VELESDB_MEMORY_HTTP_BIND": f"127.0.0.1:{port}"}), record)

    record_port(daemon.port)
    log = tmp_path / "relay.log"
    params = StdioServerParameters(command=sys.executable, args=["-m", "velesmem"], env=env, cwd=str(daemon.root))
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                before = await session.call_tool("remember", {"fact": "written on the first port"})
                assert not before.is_error, before
                assert daemon.stop() == 0
                daemon.port = free_port()
                daemon.env["VELESDB_MEMORY_HTTP_BIND"] = f"127.0.0.1:{daemon.port}"
                record_port(daemon.port)
                daemon.start()
                after = await session.call_tool("remember", {"fact": "written on the second port"})
                assert not after.is_error, after
    said = log.read_text()
    assert f"the daemon is now at {daemon.url}" in said, said
    async with daemon.client() as client:
        seen = structured(await client.call_tool("recall", {"query": "written on the second port", "k": 3}))
    assert after.structured_content["id_str"] in [m["id_str"] for m in seen["memories"]]


def test_the_relay_exits_when_the_daemon_is_gone_for_good(make_daemon: Callable[..., Daemon],
                                                          tmp_path: Path) -> None:
    daemon = make_daemon().start()
    log = tmp_path / "relay.log"
    proc = _relay(daemon, log, VELESDB_MEMORY_ATTACH_RECONNECT_SECONDS="1")
    try:
        assert "result" in _ask(proc, LEGACY_INIT)
        _ask(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert daemon.stop() == 0
        code = wait_for(lambda: proc.poll() is not None and str(proc.returncode), EXIT_DEADLINE_S,
                        "the relay to give up on the stopped daemon")
        assert code == "1"
        assert "is gone" in log.read_text(), log.read_text()
    finally:
        _end(proc)


@pytest.mark.parametrize("entry", ["velesmem.launcher", "velesmem.cli"])
def test_the_attach_path_loads_no_heavy_library(make_daemon: Callable[..., Daemon], entry: str) -> None:
    """Run the console script's entry point (``velesmem.cli``: what a script generated before the
    launcher calls) in a process that, once the relay has served an initialize and stdin closed,
    lists what it imported."""
    daemon = make_daemon().start()
    script = (f"import json, sys\nfrom {entry} import main\ncode = main([])\n"
              "print('MODULES ' + json.dumps(sorted(sys.modules)), file=sys.stderr)\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script], env=daemon.env, capture_output=True,
                          input=(json.dumps(LEGACY_INIT) + "\n").encode(), timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "velesdb-memory"
    said = done.stderr.decode()
    assert f"attaching to {daemon.url}" in said
    modules = json.loads(said.split("MODULES ", 1)[1])
    heavy = [h for h in HEAVY if h != entry]
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy)]
    assert loaded == []


def test_the_upstream_relays_sse_replies_event_by_event(tmp_path: Path) -> None:
    """The daemon answers POSTs as JSON; a server on the SDK's defaults answers them as SSE
    streams. A real FastMCP server so configured (bench/_bare_fastmcp.py --defaults, TLS from a
    local CA) is relayed message by message, with its session."""
    files = prepare_tls(tmp_path / "tls")
    port = free_port()
    with open(tmp_path / "bare.log", "wb") as out:
        server = subprocess.Popen([sys.executable, str(BENCH / "_bare_fastmcp.py"), str(port),
                                   str(files.leaf_cert), str(files.leaf_key), "--defaults"],
                                  stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    upstream = Upstream(Endpoint("127.0.0.1", port, client_ssl_context(files.ca_cert)))
    try:
        def initialize() -> Any:
            assert server.poll() is None, (tmp_path / "bare.log").read_text()
            got: list[bytes] = []
            try:
                return upstream.post(json.dumps(LEGACY_INIT).encode(), {}, got.append), got
            except Gone:
                return None

        answer, got = wait_for(initialize, 60, "the FastMCP server to answer initialize")
        assert answer.status == 200 and answer.session_id
        assert json.loads(got[0])["result"]["serverInfo"]["name"] == "bare"
        session = {SESSION_HEADER: answer.session_id, PROTOCOL_HEADER: "2025-06-18"}
        assert upstream.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
                             session, got.append).status == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"fact": "over SSE"}}}
        replies: list[bytes] = []
        answer = upstream.post(json.dumps(call).encode(), session, replies.append)
        assert answer.status == 200
        assert [json.loads(r)["id"] for r in replies] == [2]
        assert json.loads(replies[0])["result"]["structuredContent"]["id_str"]
    finally:
        upstream.close()
        server.terminate()
        server.wait(30)

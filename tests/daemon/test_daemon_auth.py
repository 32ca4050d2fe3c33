"""Bearer-token authentication against a real daemon: no, wrong and revoked tokens get 401 with
``WWW-Authenticate`` before any tool runs; a good token works and is recorded as the author;
revocation holds on the running daemon; no token reaches the log; a bind beyond loopback without
a token is refused at start (docs/auth.md)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from daemon_helpers import (
    ACCEPT,
    LEGACY_INIT,
    START_DEADLINE_S,
    Daemon,
    session_headers,
    structured,
    wait_for,
)
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from velesmem.config import Settings
from velesmem.daemon.tls import client_ssl_context
from velesmem.runtime import offline_store
from velesmem.store import StoredFact

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CALL_REMEMBER = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": "remember", "arguments": {"fact": "an intruder was here"}}}


def token_cli(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    """``velesdb-memory token ...`` against the daemon's store, as its owner would run it."""
    return subprocess.run([sys.executable, "-m", "velesmem", "token", *args], env=daemon.env,
                          capture_output=True, text=True, timeout=60, check=False)


def create_token(daemon: Daemon, name: str) -> str:
    done = token_cli(daemon, "create", "--name", name)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("vmt_") and len(token) > 40, done.stdout
    return token


def authed(daemon: Daemon, token: str) -> Client:
    transport = StreamableHttpTransport(daemon.url, verify=daemon.ssl_context(),
                                        headers={"Authorization": f"Bearer {token}"})
    return Client(transport)


def post(daemon: Daemon, body: dict, token: str | None = None,
         headers: dict[str, str] | None = None) -> httpx.Response:
    extra = dict(ACCEPT, **(headers or {}))
    if token is not None:
        extra["Authorization"] = f"Bearer {token}"
    return httpx.post(daemon.url, json=body, headers=extra, verify=daemon.ssl_context(), timeout=10)


def facts_in(daemon: Daemon) -> list[str]:
    """Every fact's content, read from the store itself (a snapshot beside the daemon)."""
    settings = Settings(path=daemon.store)
    with offline_store(settings) as store:
        return [f.content for f in store.export(0.0, include_internal=False)
                if isinstance(f, StoredFact)]


def assert_refused(response: httpx.Response, *, invalid: bool) -> None:
    assert response.status_code == 401, (response.status_code, response.text)
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="velesdb-memory"'), challenge
    assert ('error="invalid_token"' in challenge) is invalid, challenge
    assert "mcp-session-id" not in response.headers


async def test_token_mode_refuses_missing_wrong_and_revoked_tokens_before_any_tool_runs(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_AUTH="token")
    alice = create_token(daemon, "alice")
    bob = create_token(daemon, "bob")
    daemon.start()
    wrong = "vmt_" + "x" * 43

    assert_refused(post(daemon, LEGACY_INIT), invalid=False)
    assert_refused(post(daemon, LEGACY_INIT, headers={"Authorization": "Basic YWxpY2U6cHc="}),
                   invalid=False)
    assert_refused(post(daemon, LEGACY_INIT, wrong), invalid=True)
    assert_refused(post(daemon, LEGACY_INIT, "not-even-a-token"), invalid=True)
    for token in (None, wrong):  # a tool call straight away: refused, and it did not run
        assert_refused(post(daemon, CALL_REMEMBER, token), invalid=token is not None)
    assert httpx.get(f"{daemon.base}/health", verify=daemon.ssl_context()).status_code == 200

    async with authed(daemon, alice) as client:
        saved = structured(await client.call_tool(
            "remember", {"fact": "the canary ships on Tuesday", "metadata": {"project": "x"}}))
        listed = structured(await client.call_tool("list_memories", {}))
        found = structured(await client.call_tool("recall", {"query": "canary Tuesday", "k": 1}))
        by_author = structured(await client.call_tool(
            "list_memories", {"filter": {"_veles_author": "alice"}}))
        with pytest.raises(MCPError, match="_veles_author' is reserved"):
            await client.call_tool("remember", {
                "fact": "forged authorship", "metadata": {"_veles_author": "mallory"}})
    [memory] = listed["memories"]
    assert memory["id_str"] == saved["id_str"]
    assert memory["metadata"]["_veles_author"] == "alice" and memory["metadata"]["project"] == "x"
    assert found["memories"][0]["metadata"]["_veles_author"] == "alice"
    assert [m["id_str"] for m in by_author["memories"]] == [saved["id_str"]]
    assert facts_in(daemon) == ["the canary ships on Tuesday"]  # no refused call wrote anything

    async with authed(daemon, bob) as client:
        structured(await client.call_tool("remember", {"fact": "the canary ships on Tuesday"}))
        relisted = structured(await client.call_tool("list_memories", {}))
    assert relisted["memories"][0]["metadata"]["_veles_author"] == "bob"  # the latest writer
    done = token_cli(daemon, "revoke", "--name", "bob")
    assert done.returncode == 0, done.stderr
    assert_refused(post(daemon, LEGACY_INIT, bob), invalid=True)  # no restart needed
    async with authed(daemon, alice) as client:  # the other token still works
        structured(await client.call_tool("memory_status", {}))

    log = daemon.output()
    for secret in (alice, bob, wrong):
        assert secret not in log, "a bearer token reached the daemon log"
    assert "refused" in log and "401" in log  # refusals are logged, without the token
    assert "a bearer token is required on every request" in log


async def test_revoking_a_token_ends_its_open_session_at_the_next_request(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_AUTH="token")
    carol = create_token(daemon, "carol")
    dave = create_token(daemon, "dave")
    daemon.start()
    opened = post(daemon, LEGACY_INIT, carol)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    headers = session_headers(session)
    ack = post(daemon, {"jsonrpc": "2.0", "method": "notifications/initialized"}, carol, headers)
    assert ack.status_code == 202
    # The SDK binds a session to the token's name: another name cannot use it.
    stolen = post(daemon, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, dave, headers)
    assert stolen.status_code == 404, stolen.text
    listed = post(daemon, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, carol, headers)
    assert listed.status_code == 200 and "remember" in listed.text
    assert token_cli(daemon, "revoke", "--name", "carol").returncode == 0
    assert_refused(post(daemon, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, carol,
                        headers), invalid=True)


async def test_loopback_daemon_keeps_serving_without_a_token_and_checks_a_token_it_is_sent(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()  # VELESDB_MEMORY_HTTP_AUTH unset: auto
    erin = create_token(daemon, "erin")
    daemon.start()
    async with daemon.client() as client:  # an existing, token-less setup keeps working
        structured(await client.call_tool("remember", {"fact": "written with no token"}))
    async with authed(daemon, erin) as client:
        structured(await client.call_tool("remember", {"fact": "written by erin"}))
        listed = structured(await client.call_tool("list_memories", {}))
    authors = {m["content"]: m["metadata"].get("_veles_author") for m in listed["memories"]}
    assert authors == {"written with no token": None, "written by erin": "erin"}
    assert_refused(post(daemon, LEGACY_INIT, "vmt_" + "y" * 43), invalid=True)
    assert "loopback clients need no token" in daemon.output()
    assert erin not in daemon.output()


def test_a_bind_beyond_loopback_without_a_token_is_refused_at_start(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_ALLOW_REMOTE="1")
    daemon.env["VELESDB_MEMORY_HTTP_BIND"] = f"0.0.0.0:{daemon.port}"
    daemon.start(wait=False)
    assert daemon.proc is not None
    assert daemon.proc.wait(timeout=30) != 0
    out = daemon.output()
    assert "refusing to start" in out and "0.0.0.0" in out, out
    assert "velesdb-memory token create --name NAME" in out and "HTTP_AUTH=proxy" in out, out


async def test_a_bind_beyond_loopback_requires_the_token_from_every_client(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_ALLOW_REMOTE="1")
    daemon.env["VELESDB_MEMORY_HTTP_BIND"] = f"0.0.0.0:{daemon.port}"
    frank = create_token(daemon, "frank")
    daemon.start()
    assert_refused(post(daemon, LEGACY_INIT), invalid=False)  # loopback peers too
    async with authed(daemon, frank) as client:
        saved = structured(await client.call_tool("remember", {"fact": "frank was here"}))
        listed = structured(await client.call_tool("list_memories", {}))
    assert listed["memories"][0]["id_str"] == saved["id_str"]
    assert listed["memories"][0]["metadata"]["_veles_author"] == "frank"
    assert "a bearer token is required on every request" in daemon.output()


async def test_a_declared_proxy_serves_beyond_loopback_without_checking_tokens(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_ALLOW_REMOTE="1", VELESDB_MEMORY_HTTP_AUTH="proxy")
    daemon.env["VELESDB_MEMORY_HTTP_BIND"] = f"0.0.0.0:{daemon.port}"
    daemon.start()
    assert post(daemon, LEGACY_INIT).status_code == 200
    assert "left to the reverse proxy" in daemon.output()


async def test_attached_stdio_sends_the_configured_token(
    make_daemon: Callable[..., Daemon], tmp_path: Path,
) -> None:
    daemon = make_daemon(VELESDB_MEMORY_HTTP_AUTH="token")
    gina = create_token(daemon, "gina")
    daemon.start()
    log = tmp_path / "attach.log"
    env = dict(daemon.env, VELESDB_MEMORY_AUTH_TOKEN=gina)
    transport = StdioTransport(sys.executable, ["-m", "velesmem"], env=env, keep_alive=False,
                               log_file=log)
    async with Client(transport) as client:
        structured(await client.call_tool("remember", {"fact": "remembered through stdio"}))
        listed = structured(await client.call_tool("list_memories", {}))
    assert "attaching to" in log.read_text()
    assert listed["memories"][0]["metadata"]["_veles_author"] == "gina"
    assert gina not in daemon.output() and gina not in log.read_text()


def _outward_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (the route a packet to a
    documentation address would leave by; nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))  # TEST-NET-3: routed like any address
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


async def test_a_daemon_bound_beyond_loopback_is_reached_there_over_verified_tls(
    make_daemon: Callable[..., Daemon],
) -> None:
    """Bound to this machine's outward address, the daemon's leaf names that address and its
    Host check admits it: a client dialling it verifies TLS against the CA, and still needs
    its token."""
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to bind")
    daemon = make_daemon(VELESDB_MEMORY_HTTP_ALLOW_REMOTE="1")
    daemon.env["VELESDB_MEMORY_HTTP_BIND"] = f"{address}:{daemon.port}"
    gail = create_token(daemon, "gail")
    daemon.start(wait=False)
    url = f"https://{address}:{daemon.port}"

    def healthy() -> bool:
        assert daemon.proc is not None and daemon.proc.poll() is None, daemon.output()
        if not daemon.ca.exists():
            return False
        try:
            return httpx.get(f"{url}/health", verify=client_ssl_context(daemon.ca),
                             timeout=2).status_code == 200
        except (httpx.ConnectError, httpx.TimeoutException):
            return False

    wait_for(healthy, START_DEADLINE_S, f"/health on {url}\n{daemon.output()}")
    assert f"Other machines reach it as {address}" in daemon.output()
    refused = httpx.post(f"{url}/mcp", json=LEGACY_INIT, headers=ACCEPT,
                         verify=client_ssl_context(daemon.ca), timeout=10)
    assert_refused(refused, invalid=False)
    transport = StreamableHttpTransport(f"{url}/mcp", verify=client_ssl_context(daemon.ca),
                                        headers={"Authorization": f"Bearer {gail}"})
    async with Client(transport) as client:
        saved = structured(await client.call_tool("remember", {"fact": "gail reached it"}))
    assert saved["id_str"]
    with pytest.raises(ssl.SSLCertVerificationError):  # a name the leaf does not carry
        with socket.create_connection((address, daemon.port), timeout=5) as raw:
            client_ssl_context(daemon.ca).wrap_socket(raw, server_hostname="elsewhere.example")

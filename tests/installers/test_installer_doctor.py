"""``velesdb-memory doctor`` against a healthy daemon, a stopped one, and a CA it does not trust."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from installer_helpers import RunningDaemon, clean_env, find_tool, free_port

pytestmark = pytest.mark.integration  # every test here starts a process

# The code under test: a checkout on PYTHONPATH runs ahead of the installed package here too.
OURS = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
CMD = str(Path(sys.executable).parent / "velesdb-memory")


def velesmem(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "velesmem", *args], env=clean_env(home, **OURS, **env),
                          capture_output=True, text=True, timeout=90, check=False, stdin=subprocess.DEVNULL)


def test_doctor_on_a_healthy_wired_daemon(daemon: RunningDaemon) -> None:
    common = ("--port", str(daemon.port), "--tls-dir", str(daemon.tls_dir))
    for folder in (".cursor", ".codeium/windsurf", ".config/devin", ".codex", ".config/Claude"):
        (daemon.home / folder).mkdir(parents=True, exist_ok=True)  # these clients are installed
    (daemon.home / ".claude.json").write_text("{}")  # Claude Code too, but not its CLI
    wired = velesmem(daemon.home, "wire", *common, "--skip-client", "claude-code")
    assert wired.returncode == 0, wired.stdout + wired.stderr
    done = velesmem(daemon.home, "doctor", *common)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    url = f"https://127.0.0.1:{daemon.port}/mcp"
    assert f"dashboard https://127.0.0.1:{daemon.port}/," in out.splitlines()[0]
    assert f"[ ok ] daemon answers https://127.0.0.1:{daemon.port}/health (strict TLS" in out
    assert re.search(r"embedder \S+ \(384 dims, (lexical|semantic)", out) and "0 facts, 0 edges" in out
    assert "[ ok ] Python trusts the CA" in out
    if find_tool("certutil"):
        assert "the CA is not trusted in the NSS database" in out  # trust-ca never ran here
    else:
        assert "cannot tell whether the NSS database" in out and "libnss3-tools" in out
    assert "[ ok ] Node trusts the CA via NODE_EXTRA_CA_CERTS" in out
    for client in ("cursor", "windsurf", "devin"):  # no CLI check of their own: never "ok"
        assert f"[ -- ] {client}: wired (stdio {CMD}" in out and f"[ ok ] {client}" not in out
    assert "[ -- ] codex: wired" in out and "`codex` is not on PATH" in out
    assert f"[ ok ] claude-desktop: wired to {url}" in out
    assert "[ -- ] claude-code: not wired, and its `claude` CLI is not on PATH" in out
    assert f"fix: claude mcp add --scope user velesdb-memory -- {CMD}" in out
    assert "no problems found" in out
    assert len(out.splitlines()) <= 24  # one screen


def test_doctor_on_a_stopped_daemon_says_how_to_start_it(daemon: RunningDaemon) -> None:
    port = free_port()
    done = velesmem(daemon.home, "doctor", "--port", str(port), "--tls-dir", str(daemon.tls_dir))
    assert done.returncode == 1
    assert f"[FAIL] no daemon answers https://127.0.0.1:{port}/health" in done.stdout
    assert "fix: start it: velesdb-memory service install" in done.stdout


def test_doctor_on_an_untrusted_ca_names_the_mismatch(daemon: RunningDaemon, tmp_path: Path) -> None:
    from velesmem.daemon.tls import prepare_tls

    other = tmp_path / "other-tls"
    prepare_tls(other)  # a second, unrelated CA: the daemon's leaf is not signed by it
    done = velesmem(daemon.home, "doctor", "--port", str(daemon.port), "--tls-dir", str(other))
    assert done.returncode == 1
    assert f"presents a certificate not signed by {other / 'ca-cert.pem'}" in done.stdout
    assert "fix: velesdb-memory doctor --tls-dir <the daemon's TLS dir>" in done.stdout


def test_doctor_flags_a_client_wired_to_another_port(daemon: RunningDaemon, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor/mcp.json").write_text('{"mcpServers": {"velesdb-memory": {"type": "http", '
                                            '"url": "https://127.0.0.1:1/mcp"}}}')
    done = velesmem(home, "doctor", "--port", str(daemon.port), "--tls-dir", str(daemon.tls_dir))
    assert done.returncode == 1
    assert "[FAIL] cursor: wired to https://127.0.0.1:1/mcp, but the daemon is" in done.stdout
    assert "fix: velesdb-memory wire" in done.stdout


def test_doctor_warns_when_the_daemon_serves_another_store_than_the_settings_name(daemon: RunningDaemon,
                                                                                 tmp_path: Path) -> None:
    common = ("--port", str(daemon.port), "--tls-dir", str(daemon.tls_dir))
    done = velesmem(daemon.home, "doctor", *common, VELESDB_MEMORY_PATH=str(tmp_path / "elsewhere"))
    assert f"store {(daemon.root / 'store').resolve()} ·" in done.stdout  # the daemon's own, from /health
    assert f"[warn] the daemon serves {(daemon.root / 'store').resolve()}, but this machine's settings name " \
        f"{tmp_path / 'elsewhere'}" in done.stdout

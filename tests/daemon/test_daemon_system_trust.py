"""``trust-ca --system`` for real on Debian: the CA goes into the OS store, so OpenSSL's own roots
(``openssl verify -CApath /etc/ssl/certs``, a Python context with no CA file) verify the running
daemon's leaf; ``--system --remove`` takes it out and leaves no dangling link in /etc/ssl/certs.
Without root it fails with a clear error and changes nothing. Plus the table of which variable
each client runtime reads."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from daemon_helpers import Daemon

from velesmem.service.system_trust import DebianStore
from velesmem.service.trust import RUNTIME_TRUST, runtime_hints

DEBIAN = DebianStore()
NOBODY = 65534


def _debian_root_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the system store test runs on Linux"
    if os.geteuid() != 0:
        return "changing the system CA store needs root"
    if shutil.which("update-ca-certificates") is None or shutil.which("openssl") is None:
        return "needs Debian's update-ca-certificates and openssl"
    return None


needs_debian_root = pytest.mark.skipif(_debian_root_reason() is not None,
                                       reason=_debian_root_reason() or "")


@pytest.fixture
def clean_system_store() -> Iterator[None]:
    """The OS store without our CA before and after (a failed test still takes it out)."""
    if DEBIAN.anchor.exists() or DEBIAN.link.is_symlink():
        pytest.skip(f"{DEBIAN.anchor} is already installed: not touching a CA we did not add")
    try:
        yield
    finally:
        if DEBIAN.anchor.exists() or DEBIAN.link.is_symlink():
            DEBIAN.anchor.unlink(missing_ok=True)
            subprocess.run(["update-ca-certificates", "--fresh"], capture_output=True, check=False,
                           timeout=300)


def trust_ca(daemon: Daemon, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "velesmem", "trust-ca", *flags], env=daemon.env,
                          capture_output=True, text=True, timeout=300, check=False)


def openssl_verifies(leaf: Path) -> bool:
    done = subprocess.run(["openssl", "verify", "-CApath", str(DEBIAN.certs_dir), str(leaf)],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": os.environ.get("PATH", os.defpath)})  # no SSL_CERT_* here
    return done.returncode == 0


def os_roots_reach(daemon: Daemon) -> bool:
    """A strict HTTPS request to /health trusting only the OS store's directory."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(capath=str(DEBIAN.certs_dir))
    try:
        return httpx.get(f"{daemon.base}/health", verify=context, timeout=10).status_code == 200
    except httpx.ConnectError:
        return False


def our_dangling_links() -> list[Path]:
    ours = (DEBIAN.file_name, DEBIAN.link.name)
    return [p for p in DEBIAN.dangling_links() if p == DEBIAN.link or os.readlink(p).endswith(ours)]


@pytest.mark.integration
@needs_debian_root
def test_system_trust_lets_the_os_roots_verify_the_daemon_and_removal_leaves_no_dangling_link(
        make_daemon, clean_system_store: None) -> None:
    daemon = make_daemon().start()
    leaf = daemon.tls_dir / "leaf-cert.pem"
    try:
        assert not openssl_verifies(leaf) and not os_roots_reach(daemon)  # the test can fail

        added = trust_ca(daemon, "--system")
        assert added.returncode == 0, added.stderr
        assert "CA trusted in the system CA store" in added.stdout
        assert f"verified: https://127.0.0.1:{daemon.port}/health with the OS's own roots" in added.stdout
        assert DEBIAN.anchor.read_bytes() == daemon.ca.read_bytes() and DEBIAN.link.exists()
        assert openssl_verifies(leaf) and os_roots_reach(daemon)
        assert "NODE_EXTRA_CA_CERTS" in added.stdout and "Gemini CLI" in added.stdout  # Node still needs it
        assert "CODEX_CA_CERTIFICATE" not in added.stdout  # Codex reads the OS store now

        again = trust_ca(daemon, "--system")
        assert again.returncode == 0 and "already trusted" in again.stdout, again

        removed = trust_ca(daemon, "--system", "--remove")
        assert removed.returncode == 0, removed.stderr
        assert "CA removed from" in removed.stdout
        assert not DEBIAN.anchor.exists() and not DEBIAN.link.is_symlink()
        assert our_dangling_links() == []
        assert not openssl_verifies(leaf) and not os_roots_reach(daemon)

        twice = trust_ca(daemon, "--system", "--remove")
        assert twice.returncode == 0 and "was not in" in twice.stdout, twice
    finally:
        daemon.stop()


@pytest.mark.integration
@needs_debian_root
def test_without_root_system_trust_fails_with_a_clear_error_and_changes_nothing(
        clean_system_store: None) -> None:
    """A real unprivileged process (forked, then setuid nobody) runs the command."""
    from velesmem.cli import main
    from velesmem.daemon.tls import prepare_tls

    scratch = Path(tempfile.mkdtemp(prefix="velesmem-trust-"))
    try:
        ca = prepare_tls(scratch).ca_cert
        scratch.chmod(0o755)  # the CA is public; the keys stay owner-only
        ca.chmod(0o644)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: drop root, run the command, report, never return into pytest
            code = 99
            try:
                os.close(read_end)
                import traceback
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                err_file = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 — stderr until exit
                sys.stderr = err_file
                code = main(["trust-ca", "--system", "--tls-dir", str(scratch), "--port", "1"])
                err_file.seek(0)
                os.write(write_end, json.dumps({"rc": code, "stderr": err_file.read()}).encode())
            except BaseException:  # noqa: BLE001 — tell the parent what broke
                os.write(write_end, json.dumps({"error": traceback.format_exc()}).encode())
            finally:
                os._exit(0 if code != 99 else 1)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            report = json.loads(pipe.read() or b"{}")
        os.waitpid(pid, 0)
        assert report.get("rc") == 1, report
        assert "needs root" in report["stderr"]
        assert "sudo velesdb-memory trust-ca --system" in report["stderr"]
        assert not DEBIAN.anchor.exists() and not DEBIAN.link.is_symlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.integration
def test_remove_without_system_is_refused_with_what_to_use(make_daemon) -> None:
    daemon = make_daemon()
    done = trust_ca(daemon, "--remove")
    assert done.returncode == 2 and "--system" in done.stderr


def test_each_runtime_is_told_the_variable_it_really_reads() -> None:
    ca = "/home/you/.velesdb-memory-tls/ca-cert.pem"
    hints = {key: rt.hint(ca) for key, rt in RUNTIME_TRUST.items()}
    assert "Claude Code" in hints["bun"] and "opencode" in hints["bun"]
    assert f"NODE_EXTRA_CA_CERTS={ca}" in hints["bun"] and f"SSL_CERT_FILE={ca}" in hints["bun"]
    assert all(c in hints["node"] for c in ("Gemini CLI", "Qwen Code", "mcp-remote"))
    assert f"NODE_EXTRA_CA_CERTS={ca}" in hints["node"] and "SSL_CERT_FILE" not in hints["node"]
    assert "Codex" in hints["rust"]
    assert f"CODEX_CA_CERTIFICATE={ca}" in hints["rust"] and f"SSL_CERT_FILE={ca}" in hints["rust"]
    assert "NODE_EXTRA_CA_CERTS=" not in hints["rust"]


def test_once_the_os_store_trusts_the_ca_only_node_still_needs_a_variable() -> None:
    ca = "/tmp/ca.pem"
    assert len(runtime_hints(ca)) == len(RUNTIME_TRUST)
    left = runtime_hints(ca, system_trusted=True)
    assert len(left) == 1 and left[0].startswith("Node (")

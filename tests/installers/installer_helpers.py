"""Helpers for the installer tests: a clean environment, free ports, a real daemon subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import free_port as free_port  # re-exported for the tests of this folder
from tests.support import wait_for as wait_for
from tests.support.modules import missing

REPO = Path(__file__).resolve().parents[2]
INSTALLER = REPO / "installers" / "install-memory-daemon.sh"
NODE_DIR = REPO / "tests" / "node"
DEADLINE_S = 60.0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: this PATH (python, node, certutil), a temp HOME, nothing else of ours."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "npm_config_cache": str(home / ".npm-cache"),
        "npm_config_update_notifier": "false",
    }
    env.update(extra)
    return env


def health_ok(port: int, ca: Path) -> bool:
    from velesmem.service.health import check_health

    return check_health("127.0.0.1", port, str(ca)).ok


@dataclass
class RunningDaemon:
    """A real ``velesdb-memory --http`` subprocess with its own store and TLS dir."""

    root: Path
    port: int
    proc: subprocess.Popen

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tls_dir(self) -> Path:
        return self.root / "tls"

    @property
    def ca(self) -> Path:
        return self.tls_dir / "ca-cert.pem"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_daemon(root: Path) -> RunningDaemon:
    (root / "home").mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = clean_env(root / "home", VELESDB_MEMORY_PATH=str(root / "store"),
                    VELESDB_MEMORY_TLS_DIR=str(root / "tls"))
    log = open(root / "daemon.log", "wb")  # noqa: SIM115 — the daemon's stdout for its life
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "--http", "--http-port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    daemon = RunningDaemon(root, port, proc)
    try:
        wait_for(lambda: proc.poll() is not None or health_ok(port, daemon.ca), DEADLINE_S, what="the daemon's /health")
    except AssertionError:
        daemon.stop()
        raise
    if proc.poll() is not None:
        raise AssertionError(f"the daemon exited {proc.returncode}: {(root / 'daemon.log').read_text()[-2000:]}")
    return daemon


def run_installer(home: Path, *args: str, timeout: float = 120.0, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the .sh installer as a user would, against this interpreter (no venv, no pip)."""
    full_env = clean_env(home, VELESMEM_INSTALL_PYTHON=sys.executable, VELESMEM_INSTALL_MANAGER="background")
    full_env.update(env)
    return subprocess.run(["bash", str(INSTALLER), *args], env=full_env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def find_tool(tool: str) -> str | None:
    """The tool beside this interpreter (a venv's bin: shellcheck comes from the test extra), else on PATH."""
    beside = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which(tool, path=beside)


def require(tool: str) -> str:
    """A tool the test command installs (shellcheck, from the test extra) or the machine has (node):
    missing, the test fails loudly — it is a broken setup, not an optional extra."""
    path = find_tool(tool)
    assert path is not None, f"{tool} is required by this test (pip install -e '.[test]' / .ci/run)"
    return path


CERTUTIL_MISSING = ("NSS certutil is not installed (Debian/Ubuntu: apt install libnss3-tools; "
                    ".ci/run installs it): the user NSS trust store cannot be checked")


def require_os_tool(tool: str, reason: str) -> str:
    """An OS tool no package index provides (NSS certutil): skip with ``reason`` when it is
    missing, fail under CI (.ci/run installs it)."""
    path = find_tool(tool)
    if path is None:
        missing(reason)
    return path


def make_venv_seeing_our_packages(venv: Path) -> Path:
    """A new venv whose ``.pth`` puts this interpreter's site-packages on its path: pip there finds
    every dependency already installed (nothing downloaded), yet velesmem itself is installed into
    the venv (a dependency seen through a ``.pth`` lives outside the venv and is left alone)."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    ours = sysconfig.get_paths()["purelib"]
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "_velesmem_test_parent.pth").write_text(ours + "\n")
    return venv / "bin" / "python"

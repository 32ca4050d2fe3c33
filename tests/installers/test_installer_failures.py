"""Failures are reported, not hidden: a daemon that cannot start (its store is locked by another
daemon) makes ``service install`` fail with the reason and the log to read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from installer_helpers import RunningDaemon, clean_env, free_port


def test_service_install_reports_a_daemon_that_dies_at_start(daemon: RunningDaemon, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(home)
    base = [sys.executable, "-m", "velesmem", "service"]
    done = subprocess.run([*base, "install", "--manager", "background", "--port", str(free_port()),
                           "--store", str(daemon.root / "store"), "--tls-dir", str(tmp_path / "tls"),
                           "--timeout", "60"], env=env, capture_output=True, text=True, timeout=120, check=False)
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "/health did not answer" in done.stderr and "exited while starting" in done.stderr
        log = home / ".local/state/velesdb-memory/logs/daemon.log"
        assert f"its log: {log}" in done.stderr
        assert "lock" in log.read_text().lower()  # the daemon said why: the store is locked
    finally:
        subprocess.run([*base, "uninstall"], env=env, capture_output=True, timeout=60, check=False)

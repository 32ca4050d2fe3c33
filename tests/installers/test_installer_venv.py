"""The real install path once: the .sh installer pip-installs this checkout (a built wheel, not the
editable tree) into its virtual environment, and the service runs the daemon from that venv; a
re-run that finds the same version installed skips pip.

To stay fast, the venv is pre-created (the installer reuses an existing venv) and sees this test
run's own site-packages through a ``.pth`` file, so pip finds every dependency installed and builds
and installs only velesmem itself (its build backend is fetched by pip's build isolation).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import velesmem
from installer_helpers import INSTALLER, REPO, clean_env, free_port, health_ok, make_venv_seeing_our_packages, wait_for

pytestmark = pytest.mark.integration  # every test here starts a process


def test_installer_pip_installs_the_checkout_and_runs_the_daemon_from_its_venv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)  # Cursor is "installed": only installed clients are wired
    venv = tmp_path / "venv"
    make_venv_seeing_our_packages(venv)
    # pip builds a local project in place: give it a copy, so the checkout gets no build/ leftovers
    # (and stale build/ files cannot leak into the wheel).
    source = tmp_path / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "node_modules", "__pycache__", "*.egg-info", ".pytest_cache", "results"))
    port = free_port()
    env = clean_env(home, VELESMEM_INSTALL_VENV=str(venv), VELESMEM_INSTALL_SOURCE=str(source),
                    VELESMEM_INSTALL_MANAGER="background")
    run = subprocess.run(["bash", str(INSTALLER), f"--port={port}", "--yes", "--skip-ca-trust",
                          "--skip-client=claude-desktop,codex"], env=env, capture_output=True, text=True,
                         timeout=240, check=False, stdin=subprocess.DEVNULL)
    try:
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"done     pip install {source}" in run.stdout
        assert "skipped  CA trust — --skip-ca-trust" in run.stdout
        venv_python = venv / "bin" / "python"
        where = subprocess.run([str(venv_python), "-c", "import velesmem.service.render as r; print(r.__file__)"],
                               capture_output=True, text=True, check=True, timeout=60, cwd=tmp_path).stdout
        assert where.startswith(str(venv)), where  # the installed wheel, templates included
        spec = json.loads((home / ".local/state/velesdb-memory/daemon.json").read_text())
        assert spec["python"] == str(venv_python)
        assert health_ok(port, home / ".velesdb-memory-tls" / "ca-cert.pem")
        cursor = json.loads((home / ".cursor/mcp.json").read_text())["mcpServers"]["velesdb-memory"]
        assert Path(cursor["command"]).resolve() == (venv / "bin" / "velesdb-memory").resolve()
        assert (home / ".local/bin/velesdb-memory").resolve() == (venv / "bin" / "velesdb-memory").resolve()
        dist_info = sorted(venv.glob("lib/python*/site-packages/velesmem-*.dist-info"))
        assert len(dist_info) == 1
        stamp = dist_info[0].stat().st_mtime_ns
        again = subprocess.run(["bash", str(INSTALLER), "--yes", "--skip-ca-trust",
                                "--skip-client=claude-desktop,codex"], env=env, capture_output=True, text=True,
                               timeout=240, check=False, stdin=subprocess.DEVNULL)
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"skipped  pip install {source} — velesmem {velesmem.__version__} is already installed" in again.stdout
        assert "daemon unchanged" in again.stdout  # and the port came from the installer record
        assert dist_info[0].stat().st_mtime_ns == stamp  # not reinstalled
    finally:
        gone = subprocess.run(["bash", str(INSTALLER), "--uninstall", "--yes"], env=env, capture_output=True,
                              text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    wait_for(lambda: not health_ok(port, home / ".velesdb-memory-tls" / "ca-cert.pem"), 30,
         what="the daemon to stop")
    assert (home / ".velesdb-memory").is_dir() and venv.is_dir()

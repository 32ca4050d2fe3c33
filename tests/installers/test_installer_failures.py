"""Failures are reported, not hidden: a daemon that cannot start says why through ``service install``
and the installer (its own words, from its log), and a value the daemon would refuse is refused
before anything is installed, with the list of valid ones."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from installer_helpers import INSTALLER, RunningDaemon, clean_env, free_port, run_installer

from velesmem.config import EMBEDDERS

LOG = ".local/state/velesdb-memory/logs/daemon.log"


def velesmem(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "velesmem", *args], env=clean_env(home, **env),
                          capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def last_error_line(log: Path) -> str:
    lines = [line for line in log.read_text().splitlines() if "error" in line.lower()]
    assert lines, f"the daemon logged no error: {log.read_text()[-2000:]}"
    return lines[-1].strip()


@pytest.mark.integration
def test_service_install_shows_the_error_of_a_daemon_that_dies_at_start(daemon: RunningDaemon, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = velesmem(home, "service", "install", "--manager", "background", "--port", str(free_port()),
                    "--store", str(daemon.root / "store"), "--tls-dir", str(tmp_path / "tls"), "--timeout", "60")
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "/health did not answer: the daemon exited while starting" in done.stderr
        log = home / LOG
        assert f"the daemon's output ({log}):" in done.stderr
        said = last_error_line(log)
        assert "lock" in said.lower()  # the store is held by the other daemon, and it says so
        assert f"  | {said}" in done.stderr
        assert "ca-cert.pem does not exist" not in done.stderr  # not blamed on the CA any more
    finally:
        velesmem(home, "service", "uninstall")


@pytest.mark.integration
def test_the_installer_shows_why_the_daemon_died_and_wires_nothing(tmp_path: Path) -> None:
    """An embedder the daemon refuses to start with (``local`` asked for a store the hash
    embedder filled): the installer fails, quoting the daemon's own error, not a missing CA."""
    import velesmem
    from velesmem.config import Settings

    store = tmp_path / ".velesdb-memory"
    with velesmem.open(store, settings=Settings(path=store, embedder="hash")).memory as memory:
        memory.remember("filled by the hash embedder")
    run = run_installer(tmp_path, f"--port={free_port()}", "--yes", "--embedder=local")
    try:
        assert run.returncode == 1, run.stdout + run.stderr
        said = last_error_line(tmp_path / LOG)
        assert "velesdb-memory migrate --to local" in said
        assert said in run.stderr  # shown as the daemon printed it
        failed = next(line for line in run.stdout.splitlines() if line.strip().startswith("failed   daemon"))
        assert said in failed  # and in the summary's failed line
        assert "does not exist" not in run.stdout + run.stderr
        assert "no client was wired" in run.stdout and not (tmp_path / ".cursor").exists()
    finally:
        run_installer(tmp_path, "--uninstall", "--yes")


@pytest.mark.integration
def test_an_unknown_embedder_is_refused_with_the_valid_names_before_anything_is_done(tmp_path: Path) -> None:
    run = run_installer(tmp_path, "--embedder=nope", "--yes")
    assert run.returncode == 2
    assert "--embedder=nope is not a known embedder: use one of hash, local, ollama, openai" in run.stderr
    assert not (tmp_path / ".local").exists() and not (tmp_path / ".cursor").exists()

    done = velesmem(tmp_path, "service", "install", "--manager", "background", "--embedder", "nope")
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr and all(f"'{name}'" in done.stderr for name in EMBEDDERS)
    assert not (tmp_path / ".local").exists()


@pytest.mark.integration
def test_an_unknown_embedder_in_the_environment_names_the_variable_and_the_valid_names(tmp_path: Path) -> None:
    done = velesmem(tmp_path, "doctor", VELESDB_MEMORY_EMBEDDER="nope")
    assert done.returncode == 1
    assert "VELESDB_MEMORY_EMBEDDER='nope': unknown embedder; known embedders are hash, local, ollama, openai" \
        in done.stderr


def test_the_shell_installer_knows_the_same_embedders_as_velesmem() -> None:
    listed = re.search(r'^EMBEDDERS="([^"]*)"', INSTALLER.read_text(), re.MULTILINE)
    assert listed is not None and tuple(listed.group(1).split()) == EMBEDDERS
    ps1 = (INSTALLER.parent / "install-memory-daemon.ps1").read_text("utf-8")
    validate = re.search(r"\[ValidateSet\(([^)]*)\)\]\s*\[string\]\$Embedder", ps1)
    assert validate is not None
    assert tuple(name.strip().strip("'\"") for name in validate.group(1).split(",") if name.strip()) \
        == ("", *EMBEDDERS)  # "" is "not given"

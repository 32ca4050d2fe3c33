"""``--from-release[=VERSION]``: a released velesmem from the package index, pinned, its file's
SHA-256 checked. velesmem is not on PyPI yet, so the index here is a local one: a directory
holding a wheel built from this checkout, handed to pip as its only source (``PIP_NO_INDEX``,
``PIP_FIND_LINKS``) — the same pip download the installer does against PyPI."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import velesmem
from installer_helpers import (INSTALLER, REPO, clean_env, free_port, health_ok, make_venv_seeing_our_packages,
                               wait_for)

pytestmark = pytest.mark.integration  # every test here starts a process

VERSION = velesmem.__version__


@dataclass(frozen=True)
class Index:
    wheels: Path
    wheel: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.wheel.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("index")
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "node_modules", "__pycache__", "*.egg-info", ".pytest_cache", "results"))
    wheels = root / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels),
                    str(source)], check=True, timeout=240, capture_output=True)
    (wheel,) = wheels.glob(f"velesmem-{VERSION}-*.whl")
    return Index(wheels, wheel)


def run(home: Path, venv: Path, wheels: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(home, VELESMEM_INSTALL_VENV=str(venv), VELESMEM_INSTALL_MANAGER="background",
                    PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    return subprocess.run(["bash", str(INSTALLER), "--yes", *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False, stdin=subprocess.DEVNULL)


def nothing_installed(home: Path, venv: Path) -> None:
    if (venv / "bin" / "python").exists():
        done = subprocess.run([str(venv / "bin" / "python"), "-P", "-c", "import velesmem"], capture_output=True,
                              timeout=60, check=False, cwd=home)
        assert done.returncode != 0, "velesmem was installed into the venv"
    assert not (home / ".local/state/velesdb-memory").exists() and not (home / ".cursor").exists()


def test_a_version_the_index_does_not_have_fails_fast_with_the_reason(tmp_path: Path, index: Index) -> None:
    done = run(tmp_path, tmp_path / "venv", index.wheels, "--from-release=9.9.8")
    assert done.returncode == 1
    assert "velesmem==9.9.8 is not on the package index (velesmem is not published there yet)" in done.stderr
    assert "run this script from a clone of the repository instead" in done.stderr
    nothing_installed(tmp_path, tmp_path / "venv")


def test_a_checksum_mismatch_is_refused_and_nothing_is_installed(tmp_path: Path, index: Index) -> None:
    wrong = "0" * 64
    done = run(tmp_path, tmp_path / "venv", index.wheels, f"--from-release={VERSION}", f"--sha256={wrong}")
    assert done.returncode == 1
    assert (f"checksum mismatch for {index.wheel.name}: expected {wrong}, got {index.sha256} — nothing was "
            "installed") in done.stderr
    nothing_installed(tmp_path, tmp_path / "venv")


def test_without_a_checksum_the_newest_release_is_refused_unverified(tmp_path: Path, index: Index) -> None:
    done = run(tmp_path, tmp_path / "venv", index.wheels, "--from-release")
    assert done.returncode == 1
    assert f"refusing to install {index.wheel.name} unverified" in done.stderr
    assert f"this file's is {index.sha256}" in done.stderr and "--skip-checksum" in done.stderr
    nothing_installed(tmp_path, tmp_path / "venv")


@pytest.mark.parametrize("args", [("--sha256=abc",), ("--from-release", "--sha256=xyz"),
                                  ("--from-release", "--skip-checksum", f"--sha256={'a' * 64}")])
def test_checksum_flags_are_checked_before_anything_runs(tmp_path: Path, index: Index, args: tuple[str, ...]) -> None:
    done = run(tmp_path, tmp_path / "venv", index.wheels, *args)
    assert done.returncode == 2 and "--sha256" in done.stderr
    assert not (tmp_path / "venv").exists()


def test_the_verified_release_is_installed_and_a_rerun_of_that_version_skips_pip(tmp_path: Path, index: Index) -> None:
    home, venv = tmp_path / "home", tmp_path / "venv"
    home.mkdir()
    make_venv_seeing_our_packages(venv)  # dependencies found installed: no download but velesmem's
    port = free_port()
    done = run(home, venv, index.wheels, f"--from-release={VERSION}", f"--sha256={index.sha256.upper()}",
               f"--port={port}", "--skip-ca-trust", "--skip-client=claude-desktop,codex")
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"done     checksum of {index.wheel.name} — sha256 {index.sha256} matches --sha256" in done.stdout
        assert "done     pip install " in done.stdout and index.wheel.name in done.stdout
        where = subprocess.run([str(venv / "bin" / "python"), "-P", "-c", "import velesmem; print(velesmem.__file__)"],
                               capture_output=True, text=True, timeout=60, check=True, cwd=home).stdout
        assert where.startswith(str(venv))
        assert health_ok(port, home / ".velesdb-memory-tls" / "ca-cert.pem")
        again = run(home, venv, index.wheels, f"--from-release={VERSION}", f"--sha256={index.sha256}")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "downloading" not in again.stdout  # the pinned version is there: nothing fetched
        assert f"velesmem {VERSION} is already installed in {venv}" in again.stdout
    finally:
        gone = run(home, venv, index.wheels, "--uninstall")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    wait_for(lambda: not health_ok(port, home / ".velesdb-memory-tls" / "ca-cert.pem"), 30,
         what="the daemon to stop")

"""The macOS, Windows and Linux autostart artefacts, rendered on Linux and checked structurally."""

from __future__ import annotations

import plistlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from velesmem.clients.host import Host
from velesmem.service import layout, render
from velesmem.service.spec import DaemonSpec

from installer_helpers import INSTALLER, REPO, require

MAC = Host("Darwin", "/Users/you", {})
WIN = Host("Windows", "C:\\Users\\you", {"LOCALAPPDATA": "C:\\Users\\you\\AppData\\Local",
                                           "USERNAME": "you", "USERDOMAIN": "PC"})
LINUX = Host("Linux", "/home/you", {})
TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


def spec_for(host: Host, **kw) -> DaemonSpec:
    sep = "\\" if host.is_windows else "/"
    python = (f"{host.home}\\.velesdb-memory-venv\\Scripts\\python.exe" if host.is_windows
              else f"{host.home}/.velesdb-memory-venv/bin/python")
    return DaemonSpec(python=python, port=18123, store=f"{host.home}{sep}.velesdb-memory",
                      tls_dir=f"{host.home}{sep}.velesdb-memory-tls", embedder="hash", ttl=3600,
                      extra_env={"VELESDB_MEMORY_OLLAMA_URL": "http://localhost:11434"}, **kw)


def test_launchd_plist_parses_and_runs_the_daemon() -> None:
    spec = spec_for(MAC)
    plist = plistlib.loads(render.launchd_plist(spec, MAC))
    assert plist["Label"] == "com.velesdb.memory"
    assert plist["ProgramArguments"] == [spec.python, "-m", "velesmem", "--http"]
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] is True
    assert plist["EnvironmentVariables"] == spec.environment()
    assert plist["EnvironmentVariables"]["VELESDB_MEMORY_HTTP_BIND"] == "127.0.0.1:18123"
    assert plist["EnvironmentVariables"]["VELESDB_MEMORY_DEFAULT_TTL"] == "3600"
    assert plist["StandardOutPath"].startswith("/Users/you/Library/Logs/velesdb-memory/")
    assert plist["StandardErrorPath"].startswith("/Users/you/Library/Logs/velesdb-memory/")
    assert str(layout.launchd_plist(MAC)) == "/Users/you/Library/LaunchAgents/com.velesdb.memory.plist"


def test_plist_escapes_xml_special_characters() -> None:
    spec = spec_for(MAC)
    odd = DaemonSpec(**{**spec.__dict__, "store": "/Users/you/a&b <c>"})
    assert plistlib.loads(render.launchd_plist(odd, MAC))["EnvironmentVariables"]["VELESDB_MEMORY_PATH"] \
        == "/Users/you/a&b <c>"


def test_task_xml_parses_and_names_the_cmd() -> None:
    raw = render.task_xml(spec_for(WIN), WIN)
    assert raw.startswith(b"\xff\xfe")  # UTF-16 LE with BOM, as schtasks /XML expects
    root = ET.fromstring(raw)
    assert root.find("t:RegistrationInfo/t:URI", TASK_NS).text == "\\VelesDB\\MemoryDaemon"
    assert root.find("t:Triggers/t:LogonTrigger/t:UserId", TASK_NS).text == "PC\\you"
    command = root.find("t:Actions/t:Exec/t:Command", TASK_NS).text
    assert command == "C:\\Users\\you\\AppData\\Local\\velesdb-memory\\run-daemon.cmd"
    assert command == str(layout.run_daemon_cmd(WIN))
    settings = root.find("t:Settings", TASK_NS)
    assert settings.find("t:ExecutionTimeLimit", TASK_NS).text == "PT0S"
    assert settings.find("t:RestartOnFailure/t:Count", TASK_NS).text == "3"
    assert settings.find("t:RestartOnFailure/t:Interval", TASK_NS).text == "PT1M"
    assert root.find("t:Principals/t:Principal/t:RunLevel", TASK_NS).text == "LeastPrivilege"


def test_run_daemon_cmd_is_crlf_bom_free_and_sets_every_variable() -> None:
    spec = spec_for(WIN)
    raw = render.run_daemon_cmd(spec, WIN)
    assert not raw.startswith(b"\xef\xbb\xbf")
    raw.decode("utf-8")  # valid UTF-8
    assert b"\n" not in raw.replace(b"\r\n", b"")  # every line ends CRLF, no bare LF
    assert raw.endswith(b"\r\n")
    lines = raw.decode("utf-8").split("\r\n")
    assert "chcp 65001 >nul" in lines
    assert lines.index("chcp 65001 >nul") < min(i for i, ln in enumerate(lines) if ln.startswith("set "))
    for name, value in spec.environment().items():
        assert f'set "{name}={value}"' in lines
    run = next(ln for ln in lines if ln.startswith(f'"{spec.python}"'))
    assert '"-m" "velesmem" "--http"' in run
    assert "C:\\Users\\you\\AppData\\Local\\velesdb-memory\\logs\\daemon.log" in run


def test_cmd_doubles_percent_signs_and_refuses_quotes() -> None:
    from velesmem.errors import InvalidInput

    spec = spec_for(WIN)
    pct = DaemonSpec(**{**spec.__dict__, "store": "C:\\Users\\you\\100%store"})
    assert b'set "VELESDB_MEMORY_PATH=C:\\Users\\you\\100%%store"' in render.run_daemon_cmd(pct, WIN)
    quoted = DaemonSpec(**{**spec.__dict__, "store": 'C:\\a"b'})
    with pytest.raises(InvalidInput):
        render.run_daemon_cmd(quoted, WIN)


def test_systemd_unit_restarts_on_failure_hardened_with_settings_baked_in() -> None:
    spec = spec_for(LINUX)
    text = render.systemd_unit(spec, LINUX).decode()
    lines = text.splitlines()
    assert f'ExecStart="{spec.python}" "-m" "velesmem" "--http"' in lines
    assert "Restart=on-failure" in lines
    for hardening in ("NoNewPrivileges=yes", "RestrictSUIDSGID=yes", "LockPersonality=yes", "UMask=0077"):
        assert hardening in lines
    for name, value in spec.environment().items():
        assert f'Environment="{name}={value}"' in lines
    assert "WantedBy=default.target" in lines
    assert str(layout.systemd_unit(LINUX)) == "/home/you/.config/systemd/user/velesmem.service"


def test_templates_live_in_the_design_layout_dirs() -> None:
    assert (REPO / "launchd" / "com.velesdb.memory.plist.tmpl").is_file()
    assert (REPO / "windows" / "MemoryDaemon.xml.tmpl").is_file()
    assert (REPO / "windows" / "run-daemon.cmd.tmpl").is_file()
    assert (REPO / "systemd" / "velesmem.service.tmpl").is_file()


@pytest.mark.integration
def test_service_render_cli_writes_the_windows_artefacts(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "velesmem", "service", "render", "--os", "windows",
                           "--home", "C:\\Users\\you", "--python", "C:\\py\\python.exe", "--port", "18124",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MemoryDaemon.xml", "run-daemon.cmd"]
    assert b'set "VELESDB_MEMORY_HTTP_BIND=127.0.0.1:18124"\r\n' in (tmp_path / "run-daemon.cmd").read_bytes()


@pytest.mark.integration
def test_shellcheck_passes_on_the_installer() -> None:
    shellcheck = require("shellcheck")
    done = subprocess.run([shellcheck, "-x", str(INSTALLER)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
def test_installer_help_lists_every_reference_flag() -> None:
    done = subprocess.run(["bash", str(INSTALLER), "-h"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0
    for flag in ("--port", "--store", "--tls-dir", "--embedder", "--ttl", "--yes", "--skip-client",
                 "--skip-ca-trust", "--wire-only", "--force-restart", "--uninstall", "-h",
                 "--ollama-url", "--ollama-model", "--extractor-model", "VELESMEM_INSTALL_PYTHON",
                 "--from-release[=VERSION]", "--sha256", "--skip-checksum", "--reinstall",
                 "--token=TOKEN", "VELESMEM_INSTALL_TOKEN"):
        assert flag in done.stdout
    from velesmem.clients.catalog import CLIENTS

    assert all(name in done.stdout for name in CLIENTS)  # every client --skip-client takes


def test_powershell_installer_declares_the_same_flags() -> None:
    text = (REPO / "installers" / "install-memory-daemon.ps1").read_text("utf-8")
    for param in ("$Port", "$Store", "$TlsDir", "$Embedder", "$Ttl", "$Yes", "$SkipClient", "$SkipCaTrust",
                  "$WireOnly", "$ForceRestart", "$Uninstall", "$OllamaUrl", "$OllamaModel", "$ExtractorModel",
                  "$FromRelease", "$FromReleaseTag", "$Sha256", "$SkipChecksum", "$Reinstall", "$Token",
                  "VELESMEM_INSTALL_TOKEN", "wire --token -"):
        assert param in text
    assert '"velesmem" from PyPI' not in text  # no install-by-name fallback while it is unpublished
    for command in ("service install", "service wait", "trust-ca", "wire"):
        assert command in text


@pytest.mark.integration
def test_outside_a_checkout_the_installer_refuses_instead_of_guessing_a_package(tmp_path) -> None:
    from installer_helpers import clean_env

    lone = tmp_path / "install-memory-daemon.sh"
    lone.write_bytes(INSTALLER.read_bytes())  # the script alone, as if downloaded
    done = subprocess.run(["bash", str(lone), "--yes"], env=clean_env(tmp_path), capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert "not inside a velesmem checkout" in done.stderr and "not published on the package index" in done.stderr
    assert not (tmp_path / ".velesdb-memory-venv").exists()

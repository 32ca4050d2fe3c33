"""Where each service manager keeps its files, per OS, derived from an injectable ``Host``."""

from __future__ import annotations

from pathlib import PurePath

from velesmem import installed
from velesmem.clients.host import Host

APP_DIR = "velesdb-memory"


def log_dir(host: Host) -> PurePath:
    """macOS ~/Library/Logs/velesdb-memory, Windows %LOCALAPPDATA%\\velesdb-memory\\logs,
    elsewhere $XDG_STATE_HOME/velesdb-memory/logs (systemd units log to the journal too)."""
    if host.is_macos:
        return host.home_path("Library", "Logs", APP_DIR)
    if host.is_windows:
        return host.local_appdata() / APP_DIR / "logs"
    return state_dir(host) / "logs"


def state_dir(host: Host) -> PurePath:
    if host.is_windows:
        return host.local_appdata() / APP_DIR
    return host.xdg_state() / APP_DIR


def launchd_plist(host: Host) -> PurePath:
    return host.home_path("Library", "LaunchAgents", "com.velesdb.memory.plist")


def run_daemon_cmd(host: Host) -> PurePath:
    return host.local_appdata() / APP_DIR / "run-daemon.cmd"


def task_xml(host: Host) -> PurePath:
    return host.local_appdata() / APP_DIR / "MemoryDaemon.xml"


def systemd_unit(host: Host) -> PurePath:
    return host.xdg_config() / "systemd" / "user" / "velesmem.service"


def pid_file(host: Host) -> PurePath:
    return state_dir(host) / "daemon.pid"


def spec_file(host: Host) -> PurePath:
    """The settings the background daemon was started with (to detect a change on re-run)."""
    return state_dir(host) / "daemon.json"


def record_file(host: Host) -> PurePath:
    """The installer record (``velesmem.installed``): where every command finds the daemon."""
    return installed.record_path(host.env, windows=host.is_windows, home=host.home)

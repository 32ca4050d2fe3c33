"""The service managers: launchd (macOS), Scheduled Task (Windows), systemd --user (Linux), and a
detached background process with a pid file where no service manager runs (a container).

Each manager says which files it writes for a ``DaemonSpec``, starts/restarts/stops the daemon,
and answers whether it is running. Choosing one is ``select_manager``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from velesmem.clients.host import Host
from velesmem.config import ENV_PREFIX
from velesmem.errors import Internal
from velesmem.service import layout, render
from velesmem.service.spec import DaemonSpec

COMMAND_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
MANAGER_NAMES = ("launchd", "schtasks", "systemd", "background")
LOG_TAIL_LINES = 15
LOG_READ_LIMIT = 64 * 1024  # a crash loop can grow a log fast: read at most its last 64 KiB
FAILED_STARTS = 2  # a daemon its manager restarted this often while we waited is not coming up


class ServiceError(Internal):
    """A service manager refused a command; the message carries its output and the fix."""


@dataclass(frozen=True)
class LogMark:
    """The end of the daemon's logs at one moment: the clock, and each log file's size."""

    at: float
    sizes: dict[Path, int]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> list[str]:
    """The lines of ``path`` after byte ``offset`` (its last LOG_READ_LIMIT bytes at most)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = offset if offset <= size else 0  # truncated or rotated: read it whole
            start = max(start, size - LOG_READ_LIMIT)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def daemon_error(lines: list[str]) -> str:
    """The line that says why the daemon stopped: its last ``error`` line, else its last line."""
    for line in reversed(lines):
        if "error" in line.lower():
            return line.strip()
    return lines[-1].strip() if lines else ""


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"`{' '.join(argv)}` failed: {exc}") from None
    if check and done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip())[-400:]
        raise ServiceError(f"`{' '.join(argv)}` exited {done.returncode}: {said}")
    return done


class Manager(ABC):
    """One way of keeping the daemon running."""

    name = ""
    note = ""  # shown to the user, e.g. why the fallback was chosen

    def __init__(self, host: Host) -> None:
        self.host = host

    @abstractmethod
    def files(self, spec: DaemonSpec) -> dict[Path, bytes]:
        """The files this manager needs for ``spec``, path → exact bytes."""

    @abstractmethod
    def owned_paths(self) -> list[Path]:
        """Every file ``uninstall`` removes (whether or not it exists)."""

    @abstractmethod
    def activate(self, spec: DaemonSpec, restart: bool) -> None:
        """Register (if needed) and start the daemon; restart it when ``restart``."""

    @abstractmethod
    def deactivate(self) -> None:
        """Stop the daemon and unregister it (files are removed by the caller)."""

    @abstractmethod
    def is_running(self) -> bool:
        """Whether this manager's daemon process is up (not necessarily answering yet)."""

    def installed(self) -> bool:
        return any(path.exists() for path in self.owned_paths())

    def describe(self) -> str:
        return self.name

    def log_hint(self) -> str:
        """Where the daemon's output goes, for error messages."""
        return str(layout.log_dir(self.host))

    def may_still_start(self) -> bool:
        """While waiting for /health: False once the daemon can no longer come up. A manager that
        restarts it (launchd KeepAlive, systemd, the task's restart policy) is given the whole wait."""
        return True

    def log_files(self) -> list[Path]:
        """The files the daemon's output goes to (empty when it goes to a journal)."""
        return [self.host.local(layout.log_dir(self.host)) / "daemon.log"]

    def log_mark(self) -> LogMark:
        """Where the log ends now: ``log_since`` shows only what the next start writes."""
        return LogMark(time.time(), {path: _size(path) for path in self.log_files()})

    def log_since(self, mark: LogMark, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last ``lines`` lines the daemon wrote after ``mark`` (its own error, usually)."""
        out: list[str] = []
        for path in self.log_files():
            out += _read_from(path, mark.sizes.get(path, 0))
        return [line for line in out if line.strip()][-lines:]


class Launchd(Manager):
    name = "launchd"

    @property
    def _target(self) -> str:
        return f"gui/{os.getuid()}/{render.LAUNCHD_LABEL}"

    def files(self, spec: DaemonSpec) -> dict[Path, bytes]:
        return {self.host.local(layout.launchd_plist(self.host)): render.launchd_plist(spec, self.host)}

    def owned_paths(self) -> list[Path]:
        return [self.host.local(layout.launchd_plist(self.host))]

    def activate(self, spec: DaemonSpec, restart: bool) -> None:
        self.host.local(layout.log_dir(self.host)).mkdir(parents=True, exist_ok=True)
        plist = str(self.owned_paths()[0])
        domain = self._target.rsplit("/", 1)[0]
        _run(["launchctl", "bootout", self._target], check=False)
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while True:  # bootout is asynchronous: bootstrap fails with EIO until it is done
            done = _run(["launchctl", "bootstrap", domain, plist], check=False)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ServiceError(f"launchctl bootstrap {domain} {plist}: {done.stderr.strip()}")
            time.sleep(0.5)

    def deactivate(self) -> None:
        _run(["launchctl", "bootout", self._target], check=False)

    def is_running(self) -> bool:
        done = _run(["launchctl", "print", self._target], check=False)
        return done.returncode == 0 and "state = running" in done.stdout

    def log_files(self) -> list[Path]:
        logs = self.host.local(layout.log_dir(self.host))
        return [logs / "daemon.log", logs / "daemon.err.log"]

    def may_still_start(self) -> bool:
        """KeepAlive restarts a dying daemon forever: stop waiting once it failed twice."""
        done = _run(["launchctl", "print", self._target], check=False)
        return not launchd_keeps_failing(done.stdout) if done.returncode == 0 else True


def launchd_keeps_failing(printed: str) -> bool:
    """From ``launchctl print``: the job ran FAILED_STARTS times or more and its last run failed."""
    runs = re.search(r"^\s*runs = (\d+)", printed, re.MULTILINE)
    code = re.search(r"^\s*last exit code = (-?\d+)", printed, re.MULTILINE)
    return bool(runs and code and int(runs.group(1)) >= FAILED_STARTS and int(code.group(1)) != 0)


class ScheduledTask(Manager):
    name = "schtasks"

    def files(self, spec: DaemonSpec) -> dict[Path, bytes]:
        return {
            self.host.local(layout.run_daemon_cmd(self.host)): render.run_daemon_cmd(spec, self.host),
            self.host.local(layout.task_xml(self.host)): render.task_xml(spec, self.host),
        }

    def owned_paths(self) -> list[Path]:
        return [self.host.local(layout.run_daemon_cmd(self.host)), self.host.local(layout.task_xml(self.host))]

    def activate(self, spec: DaemonSpec, restart: bool) -> None:
        _run(["schtasks", "/Create", "/TN", render.TASK_NAME, "/XML", str(self.owned_paths()[1]), "/F"])
        if restart:
            _run(["schtasks", "/End", "/TN", render.TASK_NAME], check=False)
            _wait(lambda: not self.is_running(), STOP_TIMEOUT_S)
        _run(["schtasks", "/Run", "/TN", render.TASK_NAME])

    def deactivate(self) -> None:
        _run(["schtasks", "/End", "/TN", render.TASK_NAME], check=False)
        _run(["schtasks", "/Delete", "/TN", render.TASK_NAME, "/F"], check=False)

    def is_running(self) -> bool:  # State is an enum name, so this does not depend on the UI language
        path, _, leaf = render.TASK_NAME.rpartition("\\")
        done = _run(["powershell", "-NoProfile", "-NonInteractive", "-Command",
                     f"(Get-ScheduledTask -TaskPath '{path}\\' -TaskName '{leaf}').State"], check=False)
        return done.stdout.strip() == "Running"


class Systemd(Manager):
    name = "systemd"

    def files(self, spec: DaemonSpec) -> dict[Path, bytes]:
        return {self.host.local(layout.systemd_unit(self.host)): render.systemd_unit(spec, self.host)}

    def owned_paths(self) -> list[Path]:
        return [self.host.local(layout.systemd_unit(self.host))]

    def activate(self, spec: DaemonSpec, restart: bool) -> None:
        _run(["systemctl", "--user", "daemon-reload"])
        _run(["systemctl", "--user", "enable", render.SYSTEMD_UNIT])
        _run(["systemctl", "--user", "restart", render.SYSTEMD_UNIT])

    def deactivate(self) -> None:
        _run(["systemctl", "--user", "disable", "--now", render.SYSTEMD_UNIT], check=False)

    def after_uninstall(self) -> None:
        _run(["systemctl", "--user", "daemon-reload"], check=False)

    def is_running(self) -> bool:
        return _run(["systemctl", "--user", "is-active", "--quiet", render.SYSTEMD_UNIT], check=False).returncode == 0

    def log_hint(self) -> str:
        return f"journalctl --user -u {render.SYSTEMD_UNIT}"

    def log_files(self) -> list[Path]:
        return []  # the journal

    def log_since(self, mark: LogMark, lines: int = LOG_TAIL_LINES) -> list[str]:
        done = _run(["journalctl", "--user", "-u", render.SYSTEMD_UNIT, "--since", f"@{int(mark.at)}",
                     "-n", str(lines), "--no-pager", "-o", "cat"], check=False)
        return [line for line in done.stdout.splitlines() if line.strip()][-lines:]

    def may_still_start(self) -> bool:
        """Restart=on-failure retries a dying daemon: stop waiting once it failed twice."""
        done = _run(["systemctl", "--user", "show", "-p", "ActiveState", "-p", "NRestarts",
                     render.SYSTEMD_UNIT], check=False)
        return not systemd_keeps_failing(done.stdout)


def systemd_keeps_failing(shown: str) -> bool:
    """From ``systemctl show -p ActiveState -p NRestarts``: failed, or restarted FAILED_STARTS times."""
    props = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    restarts = props.get("NRestarts", "0")
    return props.get("ActiveState") == "failed" or (restarts.isdigit() and int(restarts) >= FAILED_STARTS)


class Background(Manager):
    """No service manager: a detached process (new session) with a pid file. No restart at login."""

    name = "background"
    note = ("the daemon runs as a detached background process with a pid file: it is not restarted "
            "on failure or at login — re-run the installer after a reboot")

    def files(self, spec: DaemonSpec) -> dict[Path, bytes]:
        return {self.host.local(layout.spec_file(self.host)): spec.to_json().encode("utf-8")}

    def owned_paths(self) -> list[Path]:
        return [self.host.local(layout.spec_file(self.host)), self.host.local(layout.pid_file(self.host))]

    @property
    def log_file(self) -> Path:
        return self.host.local(layout.log_dir(self.host)) / "daemon.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.host.local(layout.pid_file(self.host)).read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive_daemon(pid) else None

    def activate(self, spec: DaemonSpec, restart: bool) -> None:
        self.deactivate()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in self.host.env.items() if not k.startswith(ENV_PREFIX)}
        env.update(spec.environment())
        with open(self.log_file, "ab") as log:
            process = subprocess.Popen(spec.argv, env=env, cwd=self.host.home, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       close_fds=True)
        pid_path = self.host.local(layout.pid_file(self.host))
        pid_path.parent.mkdir(parents=True, exist_ok=True)
        pid_path.write_text(f"{process.pid}\n")

    def deactivate(self) -> None:
        pid = self.pid()
        if pid is not None:
            _terminate(pid)
        self.host.local(layout.pid_file(self.host)).unlink(missing_ok=True)

    def is_running(self) -> bool:
        return self.pid() is not None

    def log_hint(self) -> str:
        return str(self.log_file)

    def log_files(self) -> list[Path]:
        return [self.log_file]

    def may_still_start(self) -> bool:
        return self.is_running()  # nothing restarts a detached process: its exit is final

    def describe(self) -> str:
        pid = self.pid()
        return f"background (pid {pid}, log {self.log_file})" if pid else "background (not running)"


def _wait(condition: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def _alive_daemon(pid: int) -> bool:
    """The pid runs (not a zombie) and, where /proc tells, it is a velesmem process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process reusing the pid
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        try:
            if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return False
            return b"velesmem" in proc.joinpath("cmdline").read_bytes()
        except OSError:
            return False
    return True


def _terminate(pid: int) -> None:
    """SIGTERM (the daemon drains and closes the store), SIGKILL only after STOP_TIMEOUT_S."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not _wait(lambda: not _alive_daemon(pid), STOP_TIMEOUT_S):
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: not _alive_daemon(pid), 5.0)


def systemd_user_available() -> bool:
    """Whether a systemd --user manager answers (false in most containers)."""
    if shutil.which("systemctl") is None:
        return False
    try:
        return _run(["systemctl", "--user", "show-environment"], check=False).returncode == 0
    except ServiceError:
        return False


FALLBACK_NOTE = ("no service manager is reachable here (no systemd --user: a container?), so the daemon "
                 "runs as a detached background process with a pid file; it is not restarted on failure "
                 "or at login — re-run the installer (or `velesdb-memory service install`) after a reboot")


def select_manager(host: Host, requested: str = "auto") -> Manager:
    """The manager for this OS, or the one named; Linux without systemd --user → background."""
    classes: dict[str, Callable[[Host], Manager]] = {
        "launchd": Launchd, "schtasks": ScheduledTask, "systemd": Systemd, "background": Background}
    if requested != "auto":
        if requested not in classes:
            raise ServiceError(f"unknown service manager {requested!r}: one of auto, {', '.join(classes)}")
        if requested == "background" and host.is_windows:  # os.kill(pid, 0) terminates on Windows
            raise ServiceError("the background manager is POSIX-only; Windows uses the Scheduled Task")
        return classes[requested](host)
    if host.is_macos:
        return Launchd(host)
    if host.is_windows:
        return ScheduledTask(host)
    if systemd_user_available():
        return Systemd(host)
    manager = Background(host)
    manager.note = FALLBACK_NOTE
    return manager


def managers_for(host: Host) -> list[Manager]:
    """Every manager that could have installed the daemon on this OS (uninstall checks them all)."""
    if host.is_macos:
        return [Launchd(host)]
    if host.is_windows:
        return [ScheduledTask(host)]
    return [Systemd(host), Background(host)]

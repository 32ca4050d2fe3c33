"""Install, uninstall and inspect the daemon's service — idempotently, and never over a port
another program holds. Uninstall removes the service only: never the store, the CA or its trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from velesmem import __version__, installed
from velesmem.clients.files import atomic_write, read_bytes
from velesmem.clients.host import Host
from velesmem.config import ENV_PREFIX
from velesmem.errors import Internal
from velesmem.service import health, layout
from velesmem.service.managers import Manager, Systemd, daemon_error, managers_for
from velesmem.service.spec import DaemonSpec

DEFAULT_WAIT_S = 60.0


class PortBusy(Internal):
    """The daemon's port is held by a program that is not our daemon."""


@dataclass(frozen=True)
class InstallReport:
    """``action``: started, restarted or unchanged; ``health`` after the wait; ``log`` what the
    daemon wrote while starting, when it did not come up."""

    action: str
    manager: str
    written: tuple[str, ...]
    health: health.Health
    note: str = ""
    log: tuple[str, ...] = ()

    @property
    def daemon_error(self) -> str:
        """The daemon's own reason for stopping, from its log (empty when it said nothing)."""
        return daemon_error(list(self.log))


def spec_record(spec: DaemonSpec, manager: Manager) -> installed.Record:
    """What the installer records about the daemon it set up (see ``velesmem.installed``)."""
    settings = {k: v for k, v in spec.environment().items() if k.startswith(ENV_PREFIX)}
    return installed.Record(settings=settings, python=spec.python, manager=manager.name,
                            velesmem_version=__version__)


def record_file(host: Host) -> Path:
    return host.local(layout.record_file(host))


def ensure_port_free_or_ours(spec: DaemonSpec, manager: Manager) -> None:
    """Refuse (PortBusy) when the port is in use and not by this manager's daemon with our CA."""
    if not health.port_in_use(spec.host, spec.port):
        return
    if manager.is_running() and health.check_health(spec.host, spec.port, spec.ca_cert).ok:
        return
    holder = health.port_holder(spec.port)
    raise PortBusy(
        f"port {spec.port} on {spec.host} is held by another program"
        f"{f' — {holder}' if holder else ''}; stop it, or re-run with --port=<other> "
        f"(clients are wired to whichever port you choose)")


def install(spec: DaemonSpec, manager: Manager, *, force_restart: bool = False,
            wait_s: float = DEFAULT_WAIT_S) -> InstallReport:
    """Write the service files, (re)start only when something changed, then wait for /health."""
    ensure_port_free_or_ours(spec, manager)
    running = manager.is_running()
    wanted = manager.files(spec)
    changed = [path for path, data in wanted.items() if read_bytes(path) != data]
    for path in changed:
        atomic_write(path, wanted[path])
    record = record_file(manager.host)
    if installed.write(spec_record(spec, manager), record):
        changed.append(record)
    if running and not changed and not force_restart:
        status = health.check_health(spec.host, spec.port, spec.ca_cert)
        if status.ok:
            return InstallReport("unchanged", manager.describe(), (), status, manager.note)
    mark = manager.log_mark()
    manager.activate(spec, restart=running)
    status = health.wait_healthy(spec.host, spec.port, spec.ca_cert, wait_s, manager.may_still_start)
    log = () if status.ok else tuple(manager.log_since(mark))
    return InstallReport("restarted" if running else "started", manager.describe(),
                         tuple(str(p) for p in changed), status, manager.note, log)


def uninstall(host: Host) -> list[str]:
    """Stop and unregister the daemon under every manager that has it, and forget the installer
    record; the files removed."""
    removed: list[str] = []
    record = record_file(host)
    if installed.remove(record):
        removed.append(str(record))
    for manager in managers_for(host):
        if not manager.installed() and not manager.is_running():
            continue
        manager.deactivate()
        for path in manager.owned_paths():
            if path.exists():
                path.unlink()
                removed.append(str(path))
        if isinstance(manager, Systemd):
            manager.after_uninstall()
    return removed


def installed_record(host: Host) -> installed.Record | None:
    """What the installer recorded on this host, if anything."""
    return installed.read(layout.record_file(host))

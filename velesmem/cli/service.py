"""``velesdb-memory service install|uninstall|status|wait|render``: the daemon as an autostarted
service (launchd, Scheduled Task, systemd --user, or a detached process where none runs)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from velesmem.config import ENV_PREFIX
from velesmem.service.options import add_daemon_options, add_summary_option, record

if TYPE_CHECKING:
    from velesmem.service.managers import Manager
    from velesmem.service.spec import DaemonSpec


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("service", help="install, remove or inspect the autostarted daemon",
                                   description=__doc__)
    actions = parser.add_subparsers(dest="service_action", metavar="ACTION", required=True)

    install = actions.add_parser("install", help="write the service with these settings, (re)start "
                                 "it if anything changed, wait for /health over strict TLS")
    add_daemon_options(install)
    install.add_argument("--manager", default="auto",
                         help="auto (default), launchd, schtasks, systemd or background")
    install.add_argument("--force-restart", action="store_true", help="restart even if unchanged")
    install.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for /health")
    add_summary_option(install)
    install.set_defaults(handler=_install)

    uninstall = actions.add_parser("uninstall", help="stop and remove the service (never the store, "
                                   "the CA or its trust)")
    add_summary_option(uninstall)
    uninstall.set_defaults(handler=_uninstall)

    status = actions.add_parser("status", help="is the service installed, running, answering?")
    add_daemon_options(status, full=False)
    status.set_defaults(handler=_status)

    wait = actions.add_parser("wait", help="wait until /health answers over strict TLS")
    add_daemon_options(wait, full=False)
    wait.add_argument("--timeout", type=float, default=60.0)
    add_summary_option(wait)
    wait.set_defaults(handler=_wait)

    render = actions.add_parser("render", help="write the artefacts for an OS into a directory "
                                "(to inspect them; installs nothing)")
    add_daemon_options(render)
    render.add_argument("--os", choices=("macos", "linux", "windows"), required=True)
    render.add_argument("--home", required=True, help="the home directory to render for")
    render.add_argument("--python", default=None, help="the interpreter the unit runs")
    render.add_argument("--out", required=True)
    render.set_defaults(handler=_render)


def _install(args: argparse.Namespace) -> int:
    from velesmem.clients.host import Host
    from velesmem.service.lifecycle import PortBusy, install
    from velesmem.service.managers import select_manager
    from velesmem.service.options import spec_from_args

    spec = spec_from_args(args)
    manager = select_manager(Host.current(), args.manager)
    if manager.note:
        print(f"note: {manager.note}")
        record(args, "skipped", "autostart at login", manager.note)
    try:
        report = install(spec, manager, force_restart=args.force_restart, wait_s=args.timeout)
    except PortBusy as exc:
        print(f"refused: {exc.message}", file=sys.stderr)
        record(args, "failed", f"daemon on port {spec.port}", exc.message)
        return 1
    for path in report.written:
        print(f"wrote {path}")
    where = f"{spec.url} ({report.manager}; store {spec.store})"
    if not report.health.ok:
        said = report.daemon_error
        print(f"daemon {report.action} but /health did not answer: {report.health.detail}", file=sys.stderr)
        if report.log:
            print(f"the daemon's output ({manager.log_hint()}):", file=sys.stderr)
            for line in report.log:
                print(f"  | {line}", file=sys.stderr)
        else:
            print(f"the daemon wrote nothing; its log: {manager.log_hint()}", file=sys.stderr)
        record(args, "failed", f"daemon {where}", f"{said or report.health.detail}; log: {manager.log_hint()}")
        return 1
    where = f"{spec.url} ({report.manager}; store {spec.store}; embedder {_store_embedder(spec)})"
    print(f"daemon {report.action}: {where}")
    record(args, "done" if report.action != "unchanged" else "skipped",
           f"daemon {report.action}: {where}", "already running with these settings"
           if report.action == "unchanged" else "")
    return 0


def _store_embedder(spec: DaemonSpec) -> str:
    """The embedder the running daemon's store really uses (its memory_status), not the option."""
    import os

    from velesmem.service.mcpprobe import McpProbeError, call_tool

    try:
        status = call_tool(spec.url, spec.ca_cert, "memory_status",
                           token=os.environ.get(f"{ENV_PREFIX}AUTH_TOKEN", ""))
    except (McpProbeError, OSError, ValueError) as exc:
        asked = spec.embedder or "the store's own"
        return f"{asked} (memory_status did not answer: {exc})"
    embedder = status.get("embedder") or {}
    model = embedder.get("model") or embedder.get("name") or "unknown"
    dims = embedder.get("dimension")
    return f"{model}" + (f", {dims} dims" if dims else "")


def _uninstall(args: argparse.Namespace) -> int:
    from velesmem.clients.host import Host
    from velesmem.service.lifecycle import installed_record, uninstall

    host = Host.current()
    recorded = installed_record(host)
    served = ""
    if recorded is not None:
        bind = recorded.settings.get(f"{ENV_PREFIX}HTTP_BIND", "")
        served = f" (it served https://{bind}/mcp)" if bind else ""
    removed = uninstall(host)
    for path in removed:
        print(f"removed {path}")
    if removed:
        print(f"the daemon service is removed{served}")
        record(args, "done", f"service removed{served}", ", ".join(removed))
    else:
        print("no service installed")
        record(args, "skipped", "service", "none installed")
    return 0


def _status(args: argparse.Namespace) -> int:
    from velesmem.clients.host import Host
    from velesmem.service.health import check_health
    from velesmem.service.lifecycle import record_file
    from velesmem.service.managers import managers_for
    from velesmem.service.options import ca_cert_path, port_and_tls

    host = Host.current()
    port, tls_dir = port_and_tls(args)
    for manager in managers_for(host):
        state = "running" if manager.is_running() else "stopped"
        print(f"{manager.name:<10} {'installed' if manager.installed() else 'not installed'}, {state}")
    recorded = record_file(host)
    print(f"installer record: {recorded if recorded.is_file() else 'none'}")
    status = check_health("127.0.0.1", port, ca_cert_path(tls_dir))
    print(f"/health on port {port}: {'OK' if status.ok else status.kind + ' — ' + status.detail}")
    return 0 if status.ok else 1


def _wait(args: argparse.Namespace) -> int:
    from velesmem.service.health import wait_healthy
    from velesmem.service.options import ca_cert_path, port_and_tls

    port, tls_dir = port_and_tls(args)
    status = wait_healthy("127.0.0.1", port, ca_cert_path(tls_dir), args.timeout)
    if status.ok:
        print(f"https://127.0.0.1:{port}/health answers OK (strict TLS, CA {ca_cert_path(tls_dir)})")
        record(args, "done", f"/health answers on port {port} over strict TLS")
        return 0
    print(f"/health on port {port} did not answer: {status.detail}", file=sys.stderr)
    record(args, "failed", f"/health on port {port}", status.detail)
    return 1


def _render(args: argparse.Namespace) -> int:
    from velesmem.clients.host import LINUX, MACOS, WINDOWS, Host
    from velesmem.service.managers import Launchd, ScheduledTask, Systemd
    from velesmem.service.options import spec_from_args

    system = {"macos": MACOS, "linux": LINUX, "windows": WINDOWS}[args.os]
    host = Host(system=system, home=args.home, env={})
    spec = spec_from_args(args)
    if args.python:
        spec = type(spec)(**{**spec.__dict__, "python": args.python})
    managers: dict[str, Callable[[Host], Manager]] = {MACOS: Launchd, WINDOWS: ScheduledTask,
                                                      LINUX: Systemd}
    manager = managers[system](host)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path, data in manager.files(spec).items():
        target = out / Path(str(path).replace("\\", "/")).name
        target.write_bytes(data)
        print(f"{target}  (installed as {path})")
    return 0

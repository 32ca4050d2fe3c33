"""Render the autostart artefacts from the templates in ``templates/`` (top-level ``launchd/``,
``windows/``, ``systemd/`` link here) with a ``DaemonSpec`` baked in. Pure text, testable anywhere.
"""

from __future__ import annotations

from importlib import resources
from string import Template
from xml.sax.saxutils import escape

from velesmem.clients.host import Host
from velesmem.errors import InvalidInput
from velesmem.service import layout
from velesmem.service.spec import DaemonSpec

LAUNCHD_LABEL = "com.velesdb.memory"
TASK_NAME = "\\VelesDB\\MemoryDaemon"
SYSTEMD_UNIT = "velesmem.service"


def _template(*parts: str) -> Template:
    text = resources.files("velesmem.service").joinpath("templates").joinpath(*parts).read_text("utf-8")
    return Template(text)


def launchd_plist(spec: DaemonSpec, host: Host) -> bytes:
    """The launchd agent: RunAtLoad, KeepAlive, logs under ~/Library/Logs/velesdb-memory/."""
    args = "\n".join(f"\t\t<string>{escape(a)}</string>" for a in spec.argv)
    env = "\n".join(f"\t\t<key>{escape(k)}</key>\n\t\t<string>{escape(v)}</string>"
                    for k, v in spec.environment().items())
    text = _template("launchd", "com.velesdb.memory.plist.tmpl").substitute(
        label=LAUNCHD_LABEL, program_arguments=args, environment=env,
        working_directory=escape(host.home), log_dir=escape(str(layout.log_dir(host))))
    return text.encode("utf-8")


def _cmd_value(name: str, value: str) -> str:
    if any(ch in value for ch in '"\r\n'):
        raise InvalidInput(f"{name}={value!r} cannot be written to a .cmd file (quote or newline)")
    return value.replace("%", "%%")


def run_daemon_cmd(spec: DaemonSpec, host: Host) -> bytes:
    """The wrapper the Scheduled Task runs: UTF-8 without BOM, CRLF, ``chcp 65001``, ``set "V=…"``."""
    env = "\n".join(f'set "{k}={_cmd_value(k, v)}"' for k, v in spec.environment().items())
    command = " ".join(f'"{_cmd_value("argv", a)}"' for a in spec.argv)
    text = _template("windows", "run-daemon.cmd.tmpl").substitute(
        environment=env, command=command, log_dir=_cmd_value("logs", str(layout.log_dir(host))),
        working_directory=_cmd_value("home", host.home))
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")


def task_xml(spec: DaemonSpec, host: Host) -> bytes:
    """The Scheduled Task: at logon, restart 3× a minute apart, no time limit, runs the .cmd."""
    user = host.env.get("USERNAME", "")
    domain = host.env.get("USERDOMAIN", "")
    text = _template("windows", "MemoryDaemon.xml.tmpl").substitute(
        port=spec.port, task_name=escape(TASK_NAME),
        user_id=escape(f"{domain}\\{user}" if domain else user),
        command=escape(str(layout.run_daemon_cmd(host))), working_directory=escape(host.home))
    return text.encode("utf-16")  # schtasks /XML wants UTF-16 with a BOM, as its declaration says


def _systemd_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def systemd_unit(spec: DaemonSpec, host: Host) -> bytes:
    """A hardened systemd --user unit with Restart=on-failure."""
    for arg in spec.argv:
        if "\n" in arg:
            raise InvalidInput(f"{arg!r} cannot be written to a systemd unit")
    env = "\n".join(f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in spec.environment().items())
    text = _template("systemd", "velesmem.service.tmpl").substitute(
        port=spec.port, exec_start=" ".join(_systemd_quote(a) for a in spec.argv),
        environment=env)
    return text.encode("utf-8")

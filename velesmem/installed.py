"""The installer record: where the installed daemon is (port, store, TLS dir, embedder, …).

``velesdb-memory service install`` (which both installers call) writes it; every command that
needs the daemon — ``doctor``, ``wire``, ``service``, ``trust-ca``, ``status``, the stdio attach —
reads it through ``Settings.from_env()``, so they all find the daemon the installer set up.
Precedence is: command-line flags > ``VELESDB_MEMORY_*`` in the environment > this record >
the defaults. ``service uninstall`` removes it.

The file is ``<state dir>/velesdb-memory/installed.json`` — ``$XDG_STATE_HOME`` (default
``~/.local/state``) on macOS and Linux, ``%LOCALAPPDATA%`` on Windows — and holds JSON::

    {"format": 1, "velesmem_version": "0.1.0", "python": "/…/bin/python", "manager": "systemd",
     "settings": {"VELESDB_MEMORY_HTTP_BIND": "127.0.0.1:18611", "VELESDB_MEMORY_PATH": "/…",
                  "VELESDB_MEMORY_TLS_DIR": "/…", "VELESDB_MEMORY_EMBEDDER": "hash"}}

``settings`` are the raw values baked into the service, parsed like environment variables.
Only the standard library is used here: ``velesmem.config`` loads this module.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Any

FORMAT = 1
APP_DIR = "velesdb-memory"
RECORD_FILE = "installed.json"
# Baked into the service, but they describe how the service runs, not where the daemon is: a stdio
# client reading the record must not turn into an HTTP server.
NOT_INHERITED = frozenset({"VELESDB_MEMORY_HTTP", "PYTHONUNBUFFERED"})


def record_path(env: Mapping[str, str] | None = None, *, windows: bool | None = None,
                home: str | None = None) -> PurePath:
    """Where the record lives for this environment (defaults: this process and machine)."""
    env = os.environ if env is None else env
    windows = sys.platform == "win32" if windows is None else windows
    home = home if home is not None else (env.get("USERPROFILE" if windows else "HOME")
                                           or os.path.expanduser("~"))
    if windows:
        base = env.get("LOCALAPPDATA") or str(PureWindowsPath(home, "AppData", "Local"))
        return PureWindowsPath(base, APP_DIR, RECORD_FILE)
    state = env.get("XDG_STATE_HOME", "")
    base = state if state.startswith("/") else str(PurePosixPath(home, ".local", "state"))
    return PurePosixPath(base, APP_DIR, RECORD_FILE)


@dataclass(frozen=True)
class Record:
    """What the installer recorded: the daemon's settings and how it runs."""

    settings: dict[str, str]
    python: str = ""
    manager: str = ""
    velesmem_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def inherited(self) -> dict[str, str]:
        """The settings a command on this machine takes from the record."""
        return {k: v for k, v in self.settings.items() if k not in NOT_INHERITED}

    def to_json(self) -> str:
        data = {"format": FORMAT, "velesmem_version": self.velesmem_version, "python": self.python,
                "manager": self.manager, "settings": dict(sorted(self.settings.items())), **self.extra}
        return json.dumps(data, indent=2) + "\n"


class RecordUnreadable(ValueError):
    """The record exists but is not a record we can use."""


def parse(text: str) -> Record:
    """A record from its JSON text; RecordUnreadable names what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordUnreadable(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordUnreadable(f"not a format-{FORMAT} installer record")
    settings = data.get("settings")
    if not isinstance(settings, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in settings.items()):
        raise RecordUnreadable("'settings' is not an object of strings")
    known = ("format", "settings", "python", "manager", "velesmem_version")
    return Record(settings=settings, python=str(data.get("python", "")),
                  manager=str(data.get("manager", "")),
                  velesmem_version=str(data.get("velesmem_version", "")),
                  extra={k: v for k, v in data.items() if k not in known})


def read(path: PurePath | None = None) -> Record | None:
    """The record at ``path`` (default: this machine's), None when there is none.

    An unreadable record is reported on stderr once and ignored: a broken file must not stop
    ``doctor`` or the uninstaller, and re-running the installer rewrites it.
    """
    target = Path(str(path if path is not None else record_path()))
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        _warn(target, str(exc))
        return None
    try:
        return parse(text)
    except RecordUnreadable as exc:
        _warn(target, str(exc))
        return None


_warned: set[str] = set()


def _warn(path: Path, why: str) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        print(f"velesdb-memory: ignoring the installer record {path}: {why}; re-run the installer "
              "to rewrite it", file=sys.stderr)


def recorded_settings(path: PurePath | None = None) -> dict[str, str]:
    """The ``VELESDB_MEMORY_*`` values the record supplies (empty without a record)."""
    record = read(path)
    return record.inherited() if record else {}


def write(record: Record, path: PurePath | None = None) -> bool:
    """Write the record atomically (owner-only); True when the file changed."""
    target = Path(str(path if path is not None else record_path()))
    data = record.to_json()
    try:
        if target.read_text(encoding="utf-8") == data:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def remove(path: PurePath | None = None) -> bool:
    """Delete the record; True when there was one."""
    target = Path(str(path if path is not None else record_path()))
    try:
        target.unlink()
    except FileNotFoundError:
        return False
    return True

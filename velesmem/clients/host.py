"""The machine a config is computed for: OS, home directory and environment, all injectable.

Every per-OS path in ``velesmem.clients`` and ``velesmem.service`` is derived from a ``Host`` so
the macOS and Windows answers can be computed (and tested) on Linux.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

MACOS = "Darwin"
LINUX = "Linux"
WINDOWS = "Windows"
SYSTEMS = (MACOS, LINUX, WINDOWS)


@dataclass(frozen=True)
class Host:
    """An OS name (``Darwin``/``Linux``/``Windows``), a home directory and an environment."""

    system: str
    home: str
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls) -> Host:
        """This machine, read from ``platform``, ``~`` and ``os.environ``."""
        system = platform.system()
        if system not in SYSTEMS:
            system = LINUX  # BSDs and friends: XDG layout, no launchd/schtasks
        return cls(system=system, home=os.path.expanduser("~"), env=dict(os.environ))

    @property
    def is_windows(self) -> bool:
        return self.system == WINDOWS

    @property
    def is_macos(self) -> bool:
        return self.system == MACOS

    def pure(self, *parts: str) -> PurePath:
        """A path in this host's flavour (``PureWindowsPath`` on Windows)."""
        flavour = PureWindowsPath if self.is_windows else PurePosixPath
        return flavour(*parts)

    def home_path(self, *parts: str) -> PurePath:
        return self.pure(self.home, *parts)

    def appdata(self) -> PurePath:
        """Windows ``%APPDATA%`` (roaming), defaulting to ``<home>\\AppData\\Roaming``."""
        return self.pure(self.env.get("APPDATA") or str(self.home_path("AppData", "Roaming")))

    def local_appdata(self) -> PurePath:
        """Windows ``%LOCALAPPDATA%``, defaulting to ``<home>\\AppData\\Local``."""
        return self.pure(self.env.get("LOCALAPPDATA") or str(self.home_path("AppData", "Local")))

    def xdg_config(self) -> PurePath:
        value = self.env.get("XDG_CONFIG_HOME", "")
        return self.pure(value) if value.startswith("/") else self.home_path(".config")

    def xdg_state(self) -> PurePath:
        value = self.env.get("XDG_STATE_HOME", "")
        return self.pure(value) if value.startswith("/") else self.home_path(".local", "state")

    def local(self, path: PurePath) -> Path:
        """A concrete path for file operations; only meaningful when this host is the machine."""
        return Path(str(path))

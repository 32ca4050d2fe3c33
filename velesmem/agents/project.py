"""Which project a directory belongs to: the name the hooks and the Codex snippet use as the
working contexts' ``project`` (the git work tree's top directory, else the directory itself)."""

from __future__ import annotations

from pathlib import Path

FALLBACK_PROJECT = "default"  # a root directory has no name


def project_root(cwd: Path) -> Path:
    """The nearest ancestor holding ``.git`` (a directory, or a file in a linked work tree or a
    submodule), else ``cwd`` itself. No subprocess: a hook has no time for ``git``."""
    cwd = cwd.absolute()
    for candidate in (cwd, *cwd.parents):
        if (candidate / ".git").exists():
            return candidate
    return cwd


def project_name(cwd: Path) -> str:
    """The project facet for ``cwd``: its root directory's name."""
    return project_root(cwd).name or FALLBACK_PROJECT

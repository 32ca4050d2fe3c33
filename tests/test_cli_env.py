"""What a velesdb-memory process sets for itself before it loads numpy: one BLAS thread
(limits.BLAS_THREADS), unless the user chose a number."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from velesmem import limits

pytestmark = pytest.mark.integration  # every test here starts a process

PROBE = """
import os, sys
from velesmem.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
assert "numpy" not in sys.modules, "numpy was loaded before the CLI set its BLAS threads"
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def _probe(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=base | env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def test_the_cli_runs_numpy_with_one_blas_thread() -> None:
    assert _probe() == str(limits.BLAS_THREADS)


@pytest.mark.parametrize("chosen", ["2", "4"])
def test_a_thread_count_the_user_set_wins(chosen: str) -> None:
    assert _probe(OPENBLAS_NUM_THREADS=chosen) == chosen


# The daemon stack: a command's parser never needs it (each handler imports what it uses).
DAEMON_STACK = ("fastmcp", "mcp", "uvicorn", "starlette", "pydantic", "numpy", "faiss",
                "cryptography", "velesmem.daemon", "velesmem.runtime", "velesmem.store")


def test_parsing_any_command_loads_no_daemon_stack() -> None:
    code = ("import sys\nfrom velesmem.cli import build_parser\nbuild_parser()\n"
            "print(' '.join(sorted(m for m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = done.stdout.split()
    assert "velesmem.cli.wire" in modules  # every command was registered
    stack = [m for m in modules if any(m == s or m.startswith(s + ".") for s in DAEMON_STACK)]
    assert not stack, stack

"""What a velesdb-memory process sets for itself before it loads numpy: one BLAS thread
(limits.BLAS_THREADS), unless the user chose a number."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from velesmem import limits

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

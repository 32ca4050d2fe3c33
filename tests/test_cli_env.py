"""What a velesdb-memory process sets for itself before it loads numpy: one BLAS thread
(limits.BLAS_THREADS) and at most limits.MALLOC_ARENAS malloc arenas, unless the user chose."""

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


ARENAS = """
import ctypes, sys, tempfile, threading
from velesmem.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
barrier = threading.Barrier(8)

def work():
    barrier.wait()  # eight threads allocating at once: each would take an arena of its own
    blocks = [libc.malloc(4096) for _ in range(200)]
    barrier.wait()
    for block in blocks:
        libc.free(block)

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = libc.malloc_info.argtypes = None
with tempfile.NamedTemporaryFile("r") as out:
    fh = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(fh))
    libc.fclose(ctypes.c_void_p(fh))
    print(out.read().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
@pytest.mark.parametrize(("env", "most"), [({}, limits.MALLOC_ARENAS),
                                           ({"MALLOC_ARENA_MAX": "3"}, 3)])
def test_the_cli_caps_malloc_arenas_unless_the_user_did(env: dict[str, str], most: int) -> None:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", ARENAS], env=base | env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert 1 <= int(done.stdout.split()[-1]) <= most

"""The single-writer lock: a second process is refused at once, naming dir, pid and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import velesmem
from tests.support.bounds import record, timed
from velesmem.errors import StoreLocked
from velesmem.store.sqlite.lock import LOCK_FIX

HOLD = """
import sys
import velesmem
mem = velesmem.open(sys.argv[1] if len(sys.argv) > 1 else {path!r}).memory
print("ready", flush=True)
sys.stdin.readline()
mem.close()
"""

TRY = """
import time
from velesmem.errors import StoreLocked
import velesmem
start = time.monotonic()
try:
    velesmem.open({path!r})
except StoreLocked as exc:
    print(f"{{time.monotonic() - start:.3f}}")
    print(exc.message)
"""


@pytest.mark.integration
def test_second_process_is_refused_in_under_a_second(tmp_path: Path, child_env) -> None:
    with velesmem.open(tmp_path).memory as mem:
        mem.remember("held")
        out = subprocess.run([sys.executable, "-c", TRY.format(path=str(tmp_path))],
                             env=child_env, capture_output=True, text=True, timeout=60)
    elapsed, message = out.stdout.strip().split("\n", 1)
    record("lock: a second process is refused", float(elapsed), 1.0)
    assert str(tmp_path) in message and f"pid {os.getpid()}" in message and LOCK_FIX in message


@pytest.mark.integration
def test_lock_names_the_holder_process_and_frees_on_exit(tmp_path: Path, spawn) -> None:
    holder = spawn(HOLD.format(path=str(tmp_path)), stdin=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with timed("lock: a second open in the same process is refused", 1.0), \
                pytest.raises(StoreLocked) as err:
            velesmem.open(tmp_path)
        assert f"pid {holder.pid}" in err.value.message
        assert "connect to it, or point VELESDB_MEMORY_PATH elsewhere" in err.value.message
    finally:
        holder.communicate("\n", timeout=60)
    with velesmem.open(tmp_path).memory as mem:  # released with the holder
        assert mem.memory_status().memory["facts"] == 0


def test_second_open_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    with velesmem.open(tmp_path).memory, pytest.raises(StoreLocked):
        velesmem.open(tmp_path)
    velesmem.open(tmp_path).memory.close()  # released by close


def test_close_releases_file_descriptors(tmp_path: Path) -> None:
    before = set(os.listdir("/proc/self/fd"))
    mem = velesmem.open(tmp_path).memory
    mem.remember("x")
    mem.recall("x")
    mem.close()
    mem.close()  # idempotent
    assert set(os.listdir("/proc/self/fd")) <= before

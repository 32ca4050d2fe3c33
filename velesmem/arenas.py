"""Cap glibc's malloc arenas for this process: each thread that allocates under contention may get
an arena of its own (up to 8 per core), and memory freed in one stays resident for reuse there.

The daemon's allocating threads are many (request workers, the writer, the indexer, the model's
runs); with the default a 100k-fact daemon held about 7 MiB more after a few dozen calls than
with ``limits.MALLOC_ARENAS``. glibc reads ``MALLOC_ARENA_MAX`` only at process start, so the cap
is set with ``mallopt`` instead, before the first thread starts; a value the user exported wins.
Elsewhere (macOS, Windows, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

from velesmem import limits

M_ARENA_MAX = -8  # glibc's malloc.h
ENV = "MALLOC_ARENA_MAX"


def cap_arenas(arenas: int = limits.MALLOC_ARENAS) -> bool:
    """Limit malloc to ``arenas`` arenas (Linux with glibc, unless ``MALLOC_ARENA_MAX`` is set);
    whether the cap was set. Call before starting threads: glibc fixes the limit once a second
    arena exists."""
    if (not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc"
            or os.environ.get(ENV)):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False

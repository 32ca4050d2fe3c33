"""Grow FAISS's big buffers in place, without the transient copy of ``std::vector`` growth.

A growing FAISS index appends to ``std::vector`` buffers (the HNSW storage's codes, its
neighbour lists). When one outgrows its capacity, ``std::vector`` allocates a buffer twice the
size and copies into it, so for a moment the old and the new copy are both resident: at 65k
vectors of 384 float32 that was +115 MiB over a 260 MiB process. glibc's ``realloc`` of a large
block is an ``mremap``: the pages move to a bigger mapping, nothing is copied, and the unused
capacity costs address space only. ``reserve`` gives a buffer that capacity ahead of each add,
so ``std::vector`` never reallocates by itself.

It rewrites the three pointers of the ``std::vector`` inside a ``MaybeOwnedVector`` (begin,
end, end of capacity: the layout of libstdc++, whose allocator is ``operator new`` = glibc
``malloc``). So it is used only on Linux with glibc, and only after checking, for each buffer,
that those pointers agree with what FAISS reports; anywhere else FAISS grows as it always did.
"""

from __future__ import annotations

import ctypes
import logging
import platform
import sys
from typing import Any

GROWTH_MIN_BYTES = 1 << 20  # below this, std::vector's own doubling copies little
log = logging.getLogger(__name__)


def _libc() -> Any:
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.realloc.restype = ctypes.c_void_p
        libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_warned = False


def enabled() -> bool:
    """Whether buffers grow in place here (Linux, glibc)."""
    return _LIBC is not None


def _pointers(vector: Any) -> Any:
    """The (begin, end, end of capacity) words of ``vector``'s owned ``std::vector``."""
    return (ctypes.c_size_t * 3).from_address(int(vector.owned_data.this))


def reserve(vector: Any, nbytes: int) -> bool:
    """Make sure the ``MaybeOwnedVector`` ``vector`` can hold ``nbytes`` without reallocating
    (capacity at least doubled, moved by ``realloc``); False when not done (the buffer is not
    owned, not big enough to matter, or its layout does not check out)."""
    global _warned
    if _LIBC is None or not vector.is_owned:
        return False
    size = int(vector.byte_size())
    if size < GROWTH_MIN_BYTES:
        return False  # std::vector's doubling copies little; the first big block comes from it
    words = _pointers(vector)
    begin, end, cap = int(words[0]), int(words[1]), int(words[2])
    if begin != int(vector.data()) or end - begin != size or cap < end:
        if not _warned:
            log.warning("FAISS buffers grow by copying here (unexpected std::vector layout)")
            _warned = True
        return False
    if cap - begin >= nbytes:
        return True
    capacity = max(nbytes, 2 * (cap - begin))
    moved = _LIBC.realloc(begin, capacity)
    if not moved:
        raise MemoryError(f"cannot grow a FAISS buffer to {capacity} bytes")
    words[0], words[1], words[2] = moved, moved + size, moved + capacity
    vector.resize(vector.size())  # the MaybeOwnedVector re-reads its data pointer
    return True

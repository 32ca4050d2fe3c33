"""Content-derived u64 ids, their decimal-string twins, and parsing ids from the wire.

Ids are FNV-1a 64-bit hashes (the reference's scheme, so ids interoperate). They routinely
exceed 2**53, so every id leaves the process with a decimal-string twin, and every id input
accepts a JSON number or a decimal string.
"""

from __future__ import annotations

import struct

from velesmem.errors import InvalidInput

FNV_OFFSET_BASIS = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
U64_MASK = 0xFFFFFFFFFFFFFFFF
U64_MAX = U64_MASK
_I64_SIGN = 1 << 63
U64_DIGITS = len(str(U64_MAX))  # 20

ENTITY_HUB_PREFIX = "\0_veles_entity_hub\0"
WORKING_CONTEXT_PREFIX = "veles-ctx-working:"
SOURCE_HANDLE_PREFIX = "ctx://source/"


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64-bit hash of ``data``."""
    h = FNV_OFFSET_BASIS
    for byte in data:
        h ^= byte
        h = (h * FNV_PRIME) & U64_MASK
    return h


def fact_id(text: str) -> int:
    """The id of a fact: the hash of its trimmed UTF-8 text."""
    return fnv1a64(text.strip().encode("utf-8"))


def edge_id(from_id: int, to_id: int, relation: str) -> int:
    """The id of an edge: the hash of from (u64 LE) + to (u64 LE) + relation."""
    return fnv1a64(struct.pack("<QQ", from_id, to_id) + relation.encode("utf-8"))


def entity_hub_id(name: str) -> int:
    """The id of the hub fact standing for a named entity."""
    return fnv1a64((ENTITY_HUB_PREFIX + name.strip().lower()).encode("utf-8"))


def working_context_id(project: str, session: str) -> int:
    """The id of the internal fact holding one project + session working context."""
    return fnv1a64(f"{WORKING_CONTEXT_PREFIX}{project}\x1f{session}".encode())


def source_handle(content: bytes) -> str:
    """The retrieval handle of a compiler source: ``ctx://source/<decimal FNV-1a>``."""
    return f"{SOURCE_HANDLE_PREFIX}{fnv1a64(content)}"


def to_i64(u: int) -> int:
    """Reinterpret a u64 as the int64 with the same bits (FAISS and SQLite keys)."""
    return u - (1 << 64) if u & _I64_SIGN else u


def to_u64(i: int) -> int:
    """Reinterpret an int64 as the u64 with the same bits."""
    return i & U64_MASK


def parse_id(value: object, field: str = "id") -> int:
    """Read a u64 id given as a JSON number or a decimal string; raise InvalidInput otherwise."""
    if isinstance(value, bool):
        raise InvalidInput(f"{field} must be a u64 as a number or decimal string, not a boolean")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float):
        if not value.is_integer():
            raise InvalidInput(f"{field} must be an integer id, got {value!r}")
        n = int(value)
    elif isinstance(value, str):
        s = value.strip()
        if not s.isdigit() or not s.isascii():
            shown = value if len(value) <= 40 else value[:37] + "..."
            raise InvalidInput(f"{field} must be a decimal string of digits, got {shown!r}")
        if len(s.lstrip("0")) > U64_DIGITS:  # before int(): Python refuses 4,300+ digits itself
            raise InvalidInput(f"{field} is a {len(s)}-digit number, outside the u64 range "
                               "[0, 2^64-1]")
        n = int(s)
    else:
        raise InvalidInput(
            f"{field} must be a u64 as a number or decimal string, got {type(value).__name__}"
        )
    if not 0 <= n <= U64_MAX:
        raise InvalidInput(f"{field} {n} is outside the u64 range [0, 2^64-1]")
    return n

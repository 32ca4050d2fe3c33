"""Every velesmem error, in one place.

    VelesmemError            root; carries a wire ``category``
    ├── InvalidInput         bad parameter: oversized, malformed, reserved key, …  (-32602)
    │   ├── IngestDisabled       path fragment while VELESDB_MEMORY_INGEST_ROOTS is unset
    │   ├── IngestOutsideRoots   path resolves outside every allowed root
    │   ├── IngestPath           not a regular, readable, UTF-8 file within the caps
    │   └── ContextOverLimit     a compile request exceeds a per-request cap
    ├── NotFound             a missing id                                          (-32602)
    └── Internal             store fault, misconfiguration, a tool that crashed    (-32603)
        ├── StoreLocked          another process owns the store directory
        └── EmbedderMismatch     the store was filled by another embedder

Services raise these where the problem is known; the MCP layer maps ``category`` to a
JSON-RPC code in exactly one place (``velesmem.mcp.errors``).
"""

from __future__ import annotations

from enum import Enum


class Category(str, Enum):
    """Transport-neutral error category, mapped to JSON-RPC by the MCP layer."""

    INVALID_INPUT = "InvalidInput"
    NOT_FOUND = "NotFound"
    INTERNAL = "Internal"


class VelesmemError(Exception):
    """Root of every error velesmem raises on purpose."""

    category: Category = Category.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(VelesmemError):
    """A parameter is malformed, oversized or otherwise refused; nothing was changed."""

    category = Category.INVALID_INPUT


class NotFound(VelesmemError):
    """An id names nothing that is stored."""

    category = Category.NOT_FOUND


class Internal(VelesmemError):
    """A fault on our side (store, configuration, crashed task)."""

    category = Category.INTERNAL


class IngestDisabled(InvalidInput):
    """A path fragment was sent but no ingest root is configured."""


class IngestOutsideRoots(InvalidInput):
    """A path fragment resolves outside every configured ingest root."""


class IngestPath(InvalidInput):
    """A path fragment is not an acceptable file (kind, size, encoding)."""


class ContextOverLimit(InvalidInput):
    """A compile request exceeds a per-request cap (files, bytes, fragments)."""


class StoreLocked(Internal):
    """Another process holds the store directory's single-writer lock."""


class EmbedderMismatch(Internal):
    """The store was filled by a different embedder (model or dimension)."""

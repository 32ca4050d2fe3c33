"""Every velesmem error, in one place.

    VelesmemError            root; carries a wire ``category``
    ├── InvalidInput         bad parameter: oversized, malformed, reserved key, …  (-32602)
    │   ├── IngestDisabled       path fragment while VELESDB_MEMORY_INGEST_ROOTS is unset
    │   ├── IngestOutsideRoots   path resolves outside every allowed root
    │   ├── IngestPath           not a regular, readable, UTF-8 file within the caps
    │   ├── ContextOverLimit     a compile request exceeds a per-request cap
    │   └── InvalidDirective     a malformed edge:/attr:/fact: line in text to extract from
    ├── NotFound             a missing id                                          (-32602)
    └── Internal             store fault, misconfiguration, a tool that crashed    (-32603)
        ├── StoreLocked          another process owns the store directory
        ├── EmbedderMismatch     the store was filled by another embedder
        ├── Warming              the call needs what is still loading (model, vector index)
        └── ExtractionFailed     a remote extractor gave no usable extraction (unreachable,
                                 timed out, HTTP error, malformed or truncated reply)

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


class StoreUnreachable(Internal):
    """The store's database does not answer (down, or the network to it); nothing was run."""


class SpaceMoved(Internal):
    """Another daemon moved the store to a new embedding space under this call (a migration it
    committed); nothing was changed, and the call can run again in the new space."""


class Warming(Internal):
    """The call needs the embedding model or the vector index, which are still loading."""


class InvalidDirective(InvalidInput):
    """A line starting with ``edge:``, ``attr:`` or ``fact:`` is malformed; ``line`` is 1-based."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class ExtractionFailed(Internal):
    """A remote extractor produced no usable extraction; nothing was extracted.

    ``transient`` is True when trying again later may succeed (the server was unreachable, timed
    out or kept answering 5xx) and False when it will not (a refused request, a malformed or
    truncated reply).
    """

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient

"""velesmem: a local-first, explainable memory daemon for AI agents.

The Python API is ``MemoryService`` (one method per memory tool) plus the error types. Heavy
modules (FAISS, numpy) load on first use, so the CLI starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Internal",
    "InvalidInput",
    "MemoryService",
    "NotFound",
    "Settings",
    "VelesmemError",
    "__version__",
]

_LAZY = {
    "Internal": "velesmem.errors",
    "InvalidInput": "velesmem.errors",
    "MemoryService": "velesmem.memory.service",
    "NotFound": "velesmem.errors",
    "Settings": "velesmem.config",
    "VelesmemError": "velesmem.errors",
}

if TYPE_CHECKING:
    from velesmem.config import Settings
    from velesmem.errors import Internal, InvalidInput, NotFound, VelesmemError
    from velesmem.memory.service import MemoryService


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'velesmem' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

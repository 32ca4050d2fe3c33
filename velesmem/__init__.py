"""velesmem: a local-first, explainable memory daemon for AI agents.

The Python API is ``velesmem.open(path) -> Runtime``: the process's handle on one store, with
its services (``.memory``: one method per memory tool; ``.context``; ``.extraction``; …), plus the
error types. Heavy modules (FAISS, numpy) load on first use, so the CLI starts fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Internal",
    "InvalidInput",
    "MemoryService",
    "NotFound",
    "Runtime",
    "Settings",
    "VelesmemError",
    "__version__",
    "open",
]

_LAZY = {
    "Internal": "velesmem.errors",
    "InvalidInput": "velesmem.errors",
    "MemoryService": "velesmem.memory.service",
    "NotFound": "velesmem.errors",
    "Runtime": "velesmem.runtime",
    "Settings": "velesmem.config",
    "VelesmemError": "velesmem.errors",
}

if TYPE_CHECKING:
    from velesmem.config import Settings
    from velesmem.embed import Embedder
    from velesmem.errors import Internal, InvalidInput, NotFound, VelesmemError
    from velesmem.memory.service import MemoryService
    from velesmem.runtime import Runtime


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'velesmem' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def open(path: str | Path | None = None, *, settings: Settings | None = None,
         embedder: Embedder | str | None = None, clock: Callable[[], float] | None = None,
         **overrides: Any) -> Runtime:
    """Open (creating if needed) and lock the store at ``path`` (default: the settings' path),
    start its workers and wait until it is ready: the Runtime, whose ``.memory``, ``.context``
    and other services share it. ``overrides`` replace settings fields; ``embedder`` is a
    backend name (the setting, ``"hash"``) or an Embedder object to serve with.
    Close the Runtime (``with velesmem.open(p) as rt:``) or its ``.memory`` when done."""
    from velesmem.config import Settings
    from velesmem.runtime import Runtime

    settings = settings if settings is not None else Settings.from_env()
    if isinstance(embedder, str):
        overrides["embedder"], embedder = embedder, None
    if path is not None:
        overrides["path"] = Path(path).expanduser()
    if overrides:
        settings = settings.with_overrides(**overrides)
    runtime = Runtime.open(settings, embedder=embedder, clock=clock)
    runtime.wait_ready_sync()
    return runtime

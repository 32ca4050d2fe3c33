"""Readers of other memory servers' data: ``velesdb-memory import --from SOURCE PATH``.

Each source is one module here exposing ``read(path: Path) -> Iterator[Record]`` (the records
are in ``velesmem.importers.records``: ``Fact``, ``Entity``, ``Link``, ``Skipped``; a corrupt
input raises ``CorruptInput`` naming the file and line or row). A reader only reads: it streams
the source's files and yields records; ``velesmem.importers.load`` (ids, metadata, hubs, edges,
the one all-or-nothing transaction, the summary) is shared by every source.

To plug in a new source: write ``velesmem/importers/<module>.py`` with that ``read`` function,
add ``"<source-name>": "<module>"`` to ``SOURCES`` below, give it a fixture made by the real
server under ``tests/fixtures/import/<source-name>/`` and a section in ``docs/import.md``.
"""

from __future__ import annotations

import importlib
from typing import cast

from velesmem.errors import InvalidInput
from velesmem.importers.records import CorruptInput, Entity, Fact, Link, Reader, Record, Skipped

NATIVE = "native"
# source name (as --from takes it) -> module in this package with its ``read``
SOURCES: dict[str, str] = {
    "server-memory": "server_memory",
    "mcp-memory-service": "mcp_memory_service",
    "basic-memory": "basic_memory",
    "mem0": "mem0",
    "claude-code": "claude_code",
}


def reader(source: str) -> Reader:
    """The ``read`` function of ``source``; InvalidInput for a name not in SOURCES."""
    module = SOURCES.get(source)
    if module is None:
        known = ", ".join(sorted(SOURCES))
        raise InvalidInput(f"unknown import source {source!r} (known: {NATIVE}, {known})")
    try:
        loaded = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{module}":
            raise
        raise InvalidInput(f"import from {source} is not available in this version") from None
    return cast(Reader, loaded.read)


__all__ = ["NATIVE", "SOURCES", "CorruptInput", "Entity", "Fact", "Link", "Reader", "Record",
           "Skipped", "reader"]

"""What a reader of another memory server's data yields: facts, entities, links, skips.

A reader turns one source's files into a stream of these small records and knows nothing of
the store. Keys (``Fact.key``, ``Entity.key``) are the reader's own stable names for items,
unique within one import (e.g. ``"entity:Alice#0"`` or a source row's id); a ``Link`` joins two
keys. ``where`` says where the item came from (``"memory.jsonl:12"``, ``"sqlite_vec.db table
memories row 7"``) so the summary and errors can point at it. A reader raises ``CorruptInput``
for input that cannot be read as its format (the whole import is then refused, nothing is
written), and yields ``Skipped`` for an item that is well-formed but carries nothing to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from velesmem.errors import InvalidInput


@dataclass(frozen=True)
class Fact:
    """One memory: becomes a user fact whose id is the hash of ``text`` (as ``remember``).

    ``metadata`` is the source's own (tags, type, …; a reserved key such as ``content`` is kept
    as ``source_<key>``); ``created_at`` / ``updated_at`` are Unix seconds, the first also giving
    ``_veles_date`` unless the metadata sets it."""

    key: str
    text: str
    where: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    updated_at: float | None = None


@dataclass(frozen=True)
class Entity:
    """A named thing facts are about: becomes (or joins) the entity hub ``entity_hub_id(name)``;
    ``attributes`` merge into a new hub's metadata (an existing hub is left as it is)."""

    key: str
    name: str
    where: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Link:
    """A typed edge from one key to another. Fact → entity with relation ``about`` is the hub
    scaffolding (fact →about→ hub and hub →mentions→ fact); any other pair is one edge
    ``src →relation→ dst``. A link whose end is in no record is skipped with its reason."""

    src: str
    dst: str
    relation: str
    where: str


@dataclass(frozen=True)
class Skipped:
    """An item the source holds that is not imported, and why (shown in the summary)."""

    where: str
    reason: str


Record: TypeAlias = Fact | Entity | Link | Skipped
Reader: TypeAlias = Callable[[Path], Iterator[Record]]


class CorruptInput(InvalidInput):
    """The input is not what its source writes, at ``where``: nothing is imported."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}; nothing was imported")
        self.where = where
        self.problem = problem

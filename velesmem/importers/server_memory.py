"""@modelcontextprotocol/server-memory: its knowledge graph file (JSON Lines, ``MEMORY_FILE_PATH``).

Each line is ``{"type": "entity", "name", "entityType", "observations": [...]}`` or
``{"type": "relation", "from", "to", "relationType"}``. An entity becomes an entity hub (its
type in the hub's attributes); each observation becomes a fact about that hub, with the entity's
name and type in its metadata; a relation becomes a typed edge between the two hubs. The file
holds no times, so facts are dated the day of the import.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from velesmem.importers.lines import json_lines
from velesmem.importers.records import CorruptInput, Entity, Fact, Link, Record

ABOUT = "about"


def _text(obj: dict[str, Any], name: str, where: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise CorruptInput(where, f"{obj.get('type')} {name!r} must be a string, "
                                  f"got {type(value).__name__}")
    return value


def entity_key(name: str) -> str:
    return f"entity:{name}"


def read(path: Path) -> Iterator[Record]:
    """The entities, observations and relations of one server-memory file, in file order."""
    for where, obj in json_lines(path):
        kind = obj.get("type")
        if kind == "entity":
            name = _text(obj, "name", where)
            entity_type = _text(obj, "entityType", where)
            observations = obj.get("observations", [])
            if not isinstance(observations, list) or not all(
                    isinstance(o, str) for o in observations):
                raise CorruptInput(where, "entity 'observations' must be a list of strings")
            yield Entity(entity_key(name), name, where,
                         {"entity_type": entity_type, "name": name})
            for i, text in enumerate(observations, 1):
                key = f"{where}#{i}"
                yield Fact(key, text, f"{where} observation {i}",
                           {"entity": name, "entity_type": entity_type})
                yield Link(key, entity_key(name), ABOUT, where)
        elif kind == "relation":
            yield Link(entity_key(_text(obj, "from", where)), entity_key(_text(obj, "to", where)),
                       _text(obj, "relationType", where), where)
        else:
            raise CorruptInput(where, f"type must be 'entity' or 'relation', got {kind!r}")

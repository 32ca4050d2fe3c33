"""The import sources registry: a name maps to its reader, an unknown name is a typed error."""

from __future__ import annotations

import pytest

from velesmem.errors import InvalidInput
from velesmem.importers import SOURCES, CorruptInput, reader


def test_every_issue_source_is_registered() -> None:
    assert set(SOURCES) == {"server-memory", "mcp-memory-service", "basic-memory", "mem0",
                            "claude-code"}


def test_unknown_source_is_refused_with_the_known_names() -> None:
    with pytest.raises(InvalidInput, match="known: native, basic-memory"):
        reader("evernote")


def test_corrupt_input_names_where_and_says_nothing_was_imported() -> None:
    err = CorruptInput("memory.jsonl:3", "not JSON")
    assert isinstance(err, InvalidInput)
    assert err.message == "memory.jsonl:3: not JSON; nothing was imported"
    assert err.where == "memory.jsonl:3"

"""The JSON-with-comments reader and editor behind the Zed and opencode wiring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from velesmem.clients.files import ConfigRefused
from velesmem.clients.jsonc import JsoncError, Location, loads, remove_jsonc_entry, upsert_jsonc_entry

OURS = Location("context_servers", "velesdb-memory")
ENTRY = {"url": "https://127.0.0.1:18090/mcp"}


def clock() -> float:
    return 1_700_000_000.0


@pytest.mark.parametrize("text", ['{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\\"e"}}',
                                  '{"k": "http://x//not-a-comment", "e": "\\u00e9"}', "[]", '"s"', "3"])
def test_plain_json_reads_exactly_as_json_does(text: str) -> None:
    assert loads(text) == json.loads(text)


def test_comments_and_trailing_commas_are_read() -> None:
    text = '// head\n{ /* a */ "a": 1, // b\n "b": [1, 2,], }\n// tail\n'
    assert loads(text) == {"a": 1, "b": [1, 2]}
    assert loads("") == {} and loads("// only a comment\n") == {}


@pytest.mark.parametrize("text", ["{", '{"a" 1}', "{a: 1}", '{"a": 1,, }', "[1 2]", '{"a": tru}', "/* x"])
def test_malformed_text_is_an_error(text: str) -> None:
    with pytest.raises(JsoncError):
        loads(text)


def test_an_empty_file_gets_our_entry_and_a_new_file_its_envelope(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert upsert_jsonc_entry(empty, OURS, ENTRY, clock=clock)[0] == "added"
    assert loads(empty.read_text()) == {"context_servers": {"velesdb-memory": ENTRY}}
    fresh = tmp_path / "deep" / "fresh.json"
    assert upsert_jsonc_entry(fresh, OURS, ENTRY, envelope={"$schema": "s"}, clock=clock) == ("added", None)
    assert json.loads(fresh.read_text()) == {"$schema": "s", "context_servers": {"velesdb-memory": ENTRY}}


def test_one_line_and_empty_containers_are_edited_and_restored(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    for original in ('{"theme": "x"}', '{"context_servers": {}}', '{"context_servers": {"a": {"url": "u"}}}',
                     '{\n  "context_servers": {\n    // note\n  }\n}\n'):
        path.write_text(original)
        upsert_jsonc_entry(path, OURS, ENTRY, clock=clock)
        data = loads(path.read_text())
        assert data["context_servers"]["velesdb-memory"] == ENTRY
        remove_jsonc_entry(path, OURS, clock=clock)
        after = loads(path.read_text())
        before = loads(original)
        assert after.get("context_servers", {}) == before.get("context_servers", {})
        assert {k: v for k, v in after.items() if k != "context_servers"} == \
            {k: v for k, v in before.items() if k != "context_servers"}
        if "// note" in original:
            assert "// note" in path.read_text()


def test_removing_the_last_member_fixes_the_comma_before_it(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{\n  "context_servers": {\n    "a": {"url": "u"},\n    "velesdb-memory": {"url": "x"}\n  }\n}\n')
    assert remove_jsonc_entry(path, OURS, clock=clock)[0] == "removed"
    assert loads(path.read_text()) == {"context_servers": {"a": {"url": "u"}}}


def test_a_utf8_bom_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    upsert_jsonc_entry(path, OURS, ENTRY, clock=clock)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert loads(path.read_bytes()[3:].decode())["a"] == 1


def test_a_duplicated_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = '{"context_servers": {"velesdb-memory": {"url": "a"}, "velesdb-memory": {"url": "b"}}}'
    path.write_text(text)
    with pytest.raises(ConfigRefused, match="appears twice"):
        upsert_jsonc_entry(path, OURS, ENTRY, clock=clock)
    assert path.read_text() == text

"""The JSON merge rules: backup before change, other keys untouched, refusal, atomic, idempotent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from velesmem.clients.files import ConfigRefused, remove_json_entry, upsert_json_entry

ENTRY = {"type": "http", "url": "https://127.0.0.1:18090/mcp"}


def clock() -> float:
    return 1_700_000_000.0


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak.*"))


def test_new_file_is_created_with_envelope_and_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "config.json"
    assert upsert_json_entry(path, "velesdb-memory", ENTRY, envelope={"version": 1}, clock=clock) == ("added", None)
    assert json.loads(path.read_text()) == {"version": 1, "mcpServers": {"velesdb-memory": ENTRY}}
    assert backups(path) == []
    assert path.stat().st_mode & 0o777 == 0o600


def test_merge_keeps_every_other_key_and_backs_up_first(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    original = {"theme": "dark", "mcpServers": {"other": {"command": "/bin/other", "env": {"K": "v"}}}}
    path.write_text(json.dumps(original))
    os.chmod(path, 0o640)
    action, saved = upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    assert action == "added"
    assert saved == path.with_name("mcp.json.bak.1700000000")
    assert json.loads(saved.read_text()) == original
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert data["mcpServers"]["other"] == original["mcpServers"]["other"]
    assert data["mcpServers"]["velesdb-memory"] == ENTRY
    assert path.stat().st_mode & 0o777 == 0o640


def test_second_run_changes_nothing_and_makes_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {}}')
    upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    before = path.read_bytes(), backups(path)
    assert upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock) == ("unchanged", None)
    assert (path.read_bytes(), backups(path)) == before


def test_changed_url_is_updated_with_a_second_backup(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"velesdb-memory": {"url": "https://127.0.0.1:1/mcp"}}}')
    action, first = upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    action2, second = upsert_json_entry(path, "velesdb-memory", {"url": "x"}, clock=clock)
    assert (action, action2) == ("updated", "updated")
    assert first != second and first.exists() and second.exists()  # same second: numbered suffix


@pytest.mark.parametrize("content", [b"{ not json", b"[1, 2]", b'{"mcpServers": []}', b"\xff\xfe{}"])
def test_unusable_file_is_refused_and_left_byte_identical(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(content)
    with pytest.raises(ConfigRefused) as refused:
        upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    assert str(path) in refused.value.message
    assert path.read_bytes() == content
    assert backups(path) == []
    with pytest.raises(ConfigRefused):
        remove_json_entry(path, "velesdb-memory", clock=clock)
    assert path.read_bytes() == content


def test_uninstall_removes_only_our_entry(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"version": 1, "mcpServers": {"other": {"url": "u"}, "velesdb-memory": ENTRY}}))
    action, saved = remove_json_entry(path, "velesdb-memory", clock=clock)
    assert action == "removed" and saved is not None
    assert json.loads(path.read_text()) == {"version": 1, "mcpServers": {"other": {"url": "u"}}}
    assert remove_json_entry(path, "velesdb-memory", clock=clock) == ("absent", None)
    assert remove_json_entry(tmp_path / "missing.json", "velesdb-memory", clock=clock) == ("absent", None)


def test_utf8_bom_is_accepted_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"mcpServers": {}}).encode())
    upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert json.loads(raw.decode("utf-8-sig"))["mcpServers"]["velesdb-memory"] == ENTRY


def test_write_is_atomic_no_temp_file_left(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    upsert_json_entry(path, "velesdb-memory", ENTRY, clock=clock)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json", "mcp.json.bak.1700000000"]

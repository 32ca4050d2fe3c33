"""Codex's config.toml: our [mcp_servers.velesdb-memory] table edited in place, the rest untouched."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from velesmem.clients.files import ConfigRefused
from velesmem.clients.tomlfile import remove_toml_entry, upsert_toml_entry

URL = "https://127.0.0.1:18090/mcp"
ORIGINAL = """# my codex settings
model = "o3"  # keep this comment

[mcp_servers.other]
command = "npx"
args = ["-y", "other-server"]

[profiles.work]
approval_policy = "never"
"""


def clock() -> float:
    return 1_700_000_000.0


def test_added_table_keeps_comments_and_other_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(ORIGINAL)
    action, saved = upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock)
    assert action == "added" and saved is not None and saved.read_text() == ORIGINAL
    text = path.read_text()
    assert text.startswith(ORIGINAL)
    assert "# keep this comment" in text
    data = tomllib.loads(text)
    assert data["mcp_servers"]["velesdb-memory"] == {"url": URL}
    assert data["mcp_servers"]["other"]["args"] == ["-y", "other-server"]
    assert data["profiles"]["work"]["approval_policy"] == "never"


def test_idempotent_then_uninstall_restores_the_original_text(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(ORIGINAL)
    upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock)
    written = path.read_bytes()
    assert upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock) == ("unchanged", None)
    assert path.read_bytes() == written
    assert len(list(tmp_path.glob("config.toml.bak.*"))) == 1
    assert remove_toml_entry(path, "velesdb-memory", clock=clock)[0] == "removed"
    assert path.read_text() == ORIGINAL


def test_existing_table_is_replaced_in_place(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp_servers."velesdb-memory"]\nurl = "https://127.0.0.1:1/mcp"\n\n[other]\nx = 1\n')
    assert upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock)[0] == "updated"
    assert path.read_text() == f'[mcp_servers.velesdb-memory]\nurl = "{URL}"\n\n[other]\nx = 1\n'


def test_new_file(tmp_path: Path) -> None:
    path = tmp_path / ".codex" / "config.toml"
    assert upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock) == ("added", None)
    assert path.read_text() == f'[mcp_servers.velesdb-memory]\nurl = "{URL}"\n'


@pytest.mark.parametrize("content", [
    "model = \n",  # not TOML
    'mcp_servers = { velesdb-memory = { url = "x" } }\n',  # inline: no table to edit safely
])
def test_unsafe_file_is_refused_byte_identical(tmp_path: Path, content: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(content)
    with pytest.raises(ConfigRefused):
        upsert_toml_entry(path, "velesdb-memory", {"url": URL}, clock=clock)
    assert path.read_text() == content
    assert list(tmp_path.glob("*.bak.*")) == []

"""Every client's config path on macOS, Linux and Windows, computed on this machine."""

from __future__ import annotations

import pytest

from velesmem.clients import catalog
from velesmem.clients.host import Host

MAC = Host("Darwin", "/Users/you", {})
LINUX = Host("Linux", "/home/you", {})
WIN = Host("Windows", "C:\\Users\\you", {"APPDATA": "C:\\Users\\you\\AppData\\Roaming",
                                           "LOCALAPPDATA": "C:\\Users\\you\\AppData\\Local"})

EXPECTED = {
    catalog.CLAUDE_DESKTOP: (
        "/Users/you/Library/Application Support/Claude/claude_desktop_config.json",
        "/home/you/.config/Claude/claude_desktop_config.json",
        "C:\\Users\\you\\AppData\\Roaming\\Claude\\claude_desktop_config.json",
    ),
    catalog.CURSOR: ("/Users/you/.cursor/mcp.json", "/home/you/.cursor/mcp.json",
                     "C:\\Users\\you\\.cursor\\mcp.json"),
    catalog.WINDSURF: ("/Users/you/.codeium/windsurf/mcp_config.json",
                       "/home/you/.codeium/windsurf/mcp_config.json",
                       "C:\\Users\\you\\.codeium\\windsurf\\mcp_config.json"),
    catalog.DEVIN: ("/Users/you/.config/devin/config.json", "/home/you/.config/devin/config.json",
                    "C:\\Users\\you\\AppData\\Roaming\\devin\\config.json"),
    catalog.CODEX: ("/Users/you/.codex/config.toml", "/home/you/.codex/config.toml",
                    "C:\\Users\\you\\.codex\\config.toml"),
    catalog.CLAUDE_CODE: ("/Users/you/.claude.json", "/home/you/.claude.json", "C:\\Users\\you\\.claude.json"),
}


@pytest.mark.parametrize("client", catalog.CLIENTS)
def test_config_path_per_os(client: str) -> None:
    mac, linux, win = EXPECTED[client]
    path_of = catalog.CONFIG_PATHS[client]
    assert str(path_of(MAC)) == mac
    assert str(path_of(LINUX)) == linux
    assert str(path_of(WIN)) == win


def test_xdg_config_home_and_codex_home_are_honoured() -> None:
    host = Host("Linux", "/home/you", {"XDG_CONFIG_HOME": "/cfg", "CODEX_HOME": "/codex"})
    assert str(catalog.devin_config(host)) == "/cfg/devin/config.json"
    assert str(catalog.claude_desktop_config(host)) == "/cfg/Claude/claude_desktop_config.json"
    assert str(catalog.codex_config(host)) == "/codex/config.toml"


def test_windows_appdata_defaults_under_the_profile() -> None:
    host = Host("Windows", "C:\\Users\\you", {})
    assert str(catalog.devin_config(host)) == "C:\\Users\\you\\AppData\\Roaming\\devin\\config.json"


def test_entry_shapes_match_the_contract() -> None:
    url = "https://127.0.0.1:18090/mcp"
    assert catalog.JSON_CLIENTS[catalog.CURSOR].entry(url) == {"type": "http", "url": url}
    assert catalog.JSON_CLIENTS[catalog.WINDSURF].entry(url) == {"serverUrl": url}
    assert catalog.JSON_CLIENTS[catalog.DEVIN].entry(url) == {"url": url, "transport": "http"}
    assert catalog.JSON_CLIENTS[catalog.DEVIN].envelope == {"version": 1}
    assert catalog.codex_entry(url) == {"url": url}
    assert catalog.claude_code_entry(url) == {"type": "http", "url": url}

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
    catalog.CLINE: (
        "/Users/you/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
        "cline_mcp_settings.json",
        "/home/you/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "C:\\Users\\you\\AppData\\Roaming\\Code\\User\\globalStorage\\saoudrizwan.claude-dev\\settings\\"
        "cline_mcp_settings.json",
    ),
    catalog.ZED: ("/Users/you/.config/zed/settings.json", "/home/you/.config/zed/settings.json",
                  "C:\\Users\\you\\AppData\\Roaming\\Zed\\settings.json"),
    catalog.OPENCODE: ("/Users/you/.config/opencode/opencode.json", "/home/you/.config/opencode/opencode.json",
                       "C:\\Users\\you\\.config\\opencode\\opencode.json"),
    catalog.GEMINI: ("/Users/you/.gemini/settings.json", "/home/you/.gemini/settings.json",
                     "C:\\Users\\you\\.gemini\\settings.json"),
    catalog.QWEN: ("/Users/you/.qwen/settings.json", "/home/you/.qwen/settings.json",
                   "C:\\Users\\you\\.qwen\\settings.json"),
    catalog.COPILOT: ("/Users/you/.copilot/mcp-config.json", "/home/you/.copilot/mcp-config.json",
                      "C:\\Users\\you\\.copilot\\mcp-config.json"),
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
    assert str(catalog.zed_config(host)) == "/cfg/zed/settings.json"
    assert str(catalog.opencode_config(host)) == "/cfg/opencode/opencode.json"
    assert str(catalog.cline_config(host)).startswith("/cfg/Code/User/globalStorage/saoudrizwan.claude-dev/")


def test_opencode_jsonc_is_used_when_that_is_the_file_there(tmp_path) -> None:
    host = Host("Linux", str(tmp_path), {})
    assert catalog.opencode_config(host) == tmp_path / ".config/opencode/opencode.json"
    (tmp_path / ".config/opencode").mkdir(parents=True)
    (tmp_path / ".config/opencode/opencode.jsonc").write_text("{}")
    assert catalog.opencode_config(host) == tmp_path / ".config/opencode/opencode.jsonc"


def test_every_client_is_detected_by_a_directory_that_holds_its_config() -> None:
    for name, detect in catalog.DETECT_DIRS.items():
        if name == catalog.CLAUDE_CODE:  # ~/.claude.json sits beside ~/.claude
            continue
        for host in (MAC, LINUX, WIN):
            assert str(catalog.CONFIG_PATHS[name](host)).startswith(str(detect(host))), (name, host)


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
    # Where the contract shows only stdio, each client's own documented HTTP shape:
    assert catalog.JSON_CLIENTS[catalog.CLINE].entry(url) == {"type": "streamableHttp", "url": url,
                                                             "disabled": False}
    assert catalog.JSON_CLIENTS[catalog.ZED].entry(url) == {"url": url}
    assert catalog.JSON_CLIENTS[catalog.ZED].key == "context_servers"
    assert catalog.JSON_CLIENTS[catalog.OPENCODE].entry(url) == {"type": "remote", "url": url, "enabled": True}
    assert catalog.JSON_CLIENTS[catalog.OPENCODE].key == "mcp"

"""Which clients we wire, where each keeps its config on each OS, and the entry each needs.

The entry shapes follow the contract's "HTTP transport" section: Cursor ``type: http`` + ``url``,
Windsurf ``serverUrl``, Devin CLI ``url`` + ``transport: http`` inside a ``{"version": 1}``
envelope, Claude Code ``type: http`` (user scope), Codex ``url`` in ``[mcp_servers.*]``.
Claude Desktop needs the stdio bridge and lives in ``velesmem.clients.desktop``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable

from velesmem.clients.host import Host

SERVER_NAME = "velesdb-memory"
CLAUDE_CODE = "claude-code"
CODEX = "codex"
CLAUDE_DESKTOP = "claude-desktop"
CURSOR = "cursor"
WINDSURF = "windsurf"
DEVIN = "devin"
CLIENTS = (CLAUDE_CODE, CODEX, CLAUDE_DESKTOP, CURSOR, WINDSURF, DEVIN)


def claude_desktop_config(host: Host) -> PurePath:
    if host.is_macos:
        return host.home_path("Library", "Application Support", "Claude", "claude_desktop_config.json")
    if host.is_windows:
        return host.appdata() / "Claude" / "claude_desktop_config.json"
    return host.xdg_config() / "Claude" / "claude_desktop_config.json"  # community Linux builds


def cursor_config(host: Host) -> PurePath:
    return host.home_path(".cursor", "mcp.json")


def windsurf_config(host: Host) -> PurePath:
    return host.home_path(".codeium", "windsurf", "mcp_config.json")


def devin_config(host: Host) -> PurePath:
    if host.is_windows:
        return host.appdata() / "devin" / "config.json"
    return host.xdg_config() / "devin" / "config.json"


def claude_code_config(host: Host) -> PurePath:
    """Claude Code keeps user-scope MCP servers in ``~/.claude.json`` (read only: its CLI writes)."""
    return host.home_path(".claude.json")


def codex_config(host: Host) -> PurePath:
    codex_home = host.env.get("CODEX_HOME")
    return (host.pure(codex_home) if codex_home else host.home_path(".codex")) / "config.toml"


CONFIG_PATHS: dict[str, Callable[[Host], PurePath]] = {
    CLAUDE_CODE: claude_code_config,
    CODEX: codex_config,
    CLAUDE_DESKTOP: claude_desktop_config,
    CURSOR: cursor_config,
    WINDSURF: windsurf_config,
    DEVIN: devin_config,
}


@dataclass(frozen=True)
class JsonClient:
    """A client configured by one JSON file with an ``mcpServers`` object."""

    name: str
    path: Callable[[Host], PurePath]
    entry: Callable[[str], dict[str, Any]]
    envelope: dict[str, Any] = field(default_factory=dict)


JSON_CLIENTS: dict[str, JsonClient] = {
    CURSOR: JsonClient(CURSOR, cursor_config, lambda url: {"type": "http", "url": url}),
    WINDSURF: JsonClient(WINDSURF, windsurf_config, lambda url: {"serverUrl": url}),
    DEVIN: JsonClient(DEVIN, devin_config, lambda url: {"url": url, "transport": "http"},
                      envelope={"version": 1}),
}


def claude_code_entry(url: str) -> dict[str, Any]:
    return {"type": "http", "url": url}


def codex_entry(url: str) -> dict[str, Any]:
    return {"url": url}


def entry_url(entry: Any) -> str | None:
    """The daemon URL an entry of any client points at (the bridge's URL for Claude Desktop)."""
    if not isinstance(entry, dict):
        return None
    for key in ("url", "serverUrl"):
        if isinstance(entry.get(key), str):
            return entry[key]
    args = entry.get("args")
    if isinstance(args, list):
        return next((a for a in args if isinstance(a, str) and a.startswith(("https://", "http://"))), None)
    return None

"""Which clients we wire, where each keeps its config on each OS, and the entry each needs.

The entry shapes follow the contract's "HTTP transport" section: Cursor ``type: http`` + ``url``,
Windsurf ``serverUrl``, Devin CLI ``url`` + ``transport: http`` inside a ``{"version": 1}``
envelope, Claude Code ``type: http`` (user scope), Codex ``url`` in ``[mcp_servers.*]``. Where
the contract gives only a stdio shape, the client's own documented HTTP shape is used: Cline
``type: streamableHttp`` + ``url`` in ``cline_mcp_settings.json``, Zed ``context_servers`` entry
``url``, opencode ``mcp`` entry ``type: remote`` + ``url``. Claude Desktop needs the stdio bridge
(``velesmem.clients.wiring.desktop_entry``).

With a bearer token (``wire --token``, docs/auth.md) each entry also carries the
``Authorization: Bearer`` header where its client documents headers: a ``headers`` object for the
JSON clients (Cursor, Windsurf, Devin CLI, Cline, Zed, opencode; Claude Code through
``claude mcp add --header``), ``http_headers`` for Codex, and for the Desktop bridge mcp-remote's
``--header Authorization:${VELESDB_MEMORY_AUTH_HEADER}`` with the value in its env block.
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
CLINE = "cline"
ZED = "zed"
OPENCODE = "opencode"
CLIENTS = (CLAUDE_CODE, CODEX, CLAUDE_DESKTOP, CURSOR, WINDSURF, DEVIN, CLINE, ZED, OPENCODE)
CLINE_EXTENSION = "saoudrizwan.claude-dev"  # Cline's VS Code extension id: its global storage dir


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


def cline_dir(host: Host) -> PurePath:
    """Cline's global storage in VS Code's user data (present once the extension has run)."""
    if host.is_macos:
        code = host.home_path("Library", "Application Support", "Code")
    elif host.is_windows:
        code = host.appdata() / "Code"
    else:
        code = host.xdg_config() / "Code"
    return code / "User" / "globalStorage" / CLINE_EXTENSION


def cline_config(host: Host) -> PurePath:
    return cline_dir(host) / "settings" / "cline_mcp_settings.json"


def zed_dir(host: Host) -> PurePath:
    """Zed's config dir: ``%APPDATA%\\Zed`` on Windows, ``~/.config/zed`` elsewhere (macOS too)."""
    return host.appdata() / "Zed" if host.is_windows else host.xdg_config() / "zed"


def zed_config(host: Host) -> PurePath:
    return zed_dir(host) / "settings.json"


def opencode_dir(host: Host) -> PurePath:
    """opencode's global config dir, XDG on every OS (``%USERPROFILE%\\.config`` on Windows)."""
    value = host.env.get("XDG_CONFIG_HOME", "")
    base = host.pure(value) if value else host.home_path(".config")
    return base / "opencode"


def opencode_config(host: Host) -> PurePath:
    """``opencode.jsonc`` when that is the file in use, else ``opencode.json``."""
    jsonc = opencode_dir(host) / "opencode.jsonc"
    return jsonc if host.local(jsonc).exists() else opencode_dir(host) / "opencode.json"


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
    CLINE: cline_config,
    ZED: zed_config,
    OPENCODE: opencode_config,
}


AUTH_HEADER = "Authorization"
BRIDGE_AUTH_ENV = "VELESDB_MEMORY_AUTH_HEADER"  # mcp-remote expands ${…} in --header from its env


def bearer(token: str) -> str:
    """The Authorization header's value for ``token``."""
    return f"Bearer {token}"


def with_headers(entry: dict[str, Any], auth: str | None, key: str = "headers") -> dict[str, Any]:
    """``entry`` plus ``{key: {"Authorization": auth}}`` when there is an ``auth`` value."""
    return {**entry, key: {AUTH_HEADER: auth}} if auth else entry


def entry_auth(entry: Any) -> str | None:
    """The Authorization value one of our entries carries, in any client's shape (None: none)."""
    if not isinstance(entry, dict):
        return None
    for key in ("headers", "http_headers"):
        headers = entry.get(key)
        if isinstance(headers, dict) and isinstance(headers.get(AUTH_HEADER), str):
            return headers[AUTH_HEADER]
    env = entry.get("env")
    if isinstance(env, dict) and isinstance(env.get(BRIDGE_AUTH_ENV), str):
        return env[BRIDGE_AUTH_ENV]
    return None


@dataclass(frozen=True)
class JsonClient:
    """A client configured by one JSON file with an object of servers (``mcpServers`` unless
    ``key`` says otherwise)."""

    name: str
    path: Callable[[Host], PurePath]
    entry: Callable[[str], dict[str, Any]]  # the URL → the entry without headers
    envelope: dict[str, Any] = field(default_factory=dict)  # top-level keys a new file starts with
    key: str = "mcpServers"
    jsonc: bool = False  # comments allowed: edited as text, comments kept (velesmem.clients.jsonc)
    detect: Callable[[Host], PurePath] | None = None  # wired only when this directory exists
    hint: str = ""  # shown when the entry was written: what the client may still need


NODE_TRUST_HINT = ("{name} runs on Node: if it reports a certificate error, start it with "
                   "NODE_EXTRA_CA_CERTS={ca} in its environment")
OS_TRUST_HINT = ("{name} verifies TLS against the OS trust store: run velesdb-memory trust-ca (macOS, "
                 "Windows); on Linux add the CA system-wide (see docs/installers.md, CA trust)")

JSON_CLIENTS: dict[str, JsonClient] = {
    CURSOR: JsonClient(CURSOR, cursor_config, lambda url: {"type": "http", "url": url}),
    WINDSURF: JsonClient(WINDSURF, windsurf_config, lambda url: {"serverUrl": url}),
    DEVIN: JsonClient(DEVIN, devin_config, lambda url: {"url": url, "transport": "http"},
                      envelope={"version": 1}),
    CLINE: JsonClient(CLINE, cline_config,
                      lambda url: {"type": "streamableHttp", "url": url, "disabled": False},
                      detect=cline_dir, hint=NODE_TRUST_HINT.format(name="VS Code (Cline)", ca="{ca}")),
    ZED: JsonClient(ZED, zed_config, lambda url: {"url": url}, key="context_servers", jsonc=True,
                    detect=zed_dir, hint=OS_TRUST_HINT.format(name="Zed")),
    OPENCODE: JsonClient(OPENCODE, opencode_config,
                         lambda url: {"type": "remote", "url": url, "enabled": True}, key="mcp",
                         jsonc=True, detect=opencode_dir,
                         envelope={"$schema": "https://opencode.ai/config.json"},
                         hint=NODE_TRUST_HINT.format(name="opencode", ca="{ca}")),
}


def claude_code_entry(url: str, auth: str | None = None) -> dict[str, Any]:
    return with_headers({"type": "http", "url": url}, auth)


def codex_entry(url: str, auth: str | None = None) -> dict[str, Any]:
    return with_headers({"url": url}, auth, key="http_headers")


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

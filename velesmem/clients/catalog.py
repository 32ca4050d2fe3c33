"""Which clients we wire, where each keeps its config on each OS, and the entry each needs.

The default entry is the stdio form (``CONNECTIONS``, docs/clients.md): the absolute path of the
installed ``velesdb-memory`` script, no arguments, which attaches to the running daemon and
verifies its CA itself, so it connects whatever the client's runtime trusts. ``wire --transport
http`` writes the HTTPS URL entries below instead, with the trust variable each runtime reads.

The HTTP entry shapes follow the contract's "HTTP transport" section: Cursor ``type: http`` + ``url``,
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

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

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
GEMINI = "gemini"
QWEN = "qwen"
COPILOT = "copilot"
CLIENTS = (CLAUDE_CODE, CODEX, CLAUDE_DESKTOP, CURSOR, WINDSURF, DEVIN, CLINE, ZED, OPENCODE,
           GEMINI, QWEN, COPILOT)
STDIO, HTTP, BRIDGE = "stdio", "http", "bridge"
TRANSPORTS = (STDIO, HTTP)  # what ``wire --transport`` chooses between
AUTH_TOKEN_ENV = "VELESDB_MEMORY_AUTH_TOKEN"  # the token a stdio entry hands the attaching process


@dataclass(frozen=True)
class Connection:
    """How velesmem reaches one client: the transport ``wire`` writes by default, the runtime the
    client runs on, the CA variables that runtime reads for an HTTPS entry (``--transport http``),
    the CLI that says it is installed, and its own model-free connection check (for ``doctor``)."""

    transport: str
    runtime: str
    trust: tuple[str, ...]
    cli: str | None = None
    check: str = ""


# One table, mirrored in docs/clients.md (tests/test_docs.py compares them).
CONNECTIONS: dict[str, Connection] = {
    CLAUDE_CODE: Connection(STDIO, "Bun", ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"), "claude",
                            "claude mcp list"),
    CODEX: Connection(STDIO, "Rust (rustls)", ("CODEX_CA_CERTIFICATE", "SSL_CERT_FILE"), "codex",
                      "codex app-server: mcpServerStatus/list"),
    CLAUDE_DESKTOP: Connection(BRIDGE, "Electron + mcp-remote (Node)", ("NODE_EXTRA_CA_CERTS",)),
    CURSOR: Connection(STDIO, "Electron", ("OS trust store",)),
    WINDSURF: Connection(STDIO, "Electron", ("OS trust store",)),
    DEVIN: Connection(STDIO, "native", ("OS trust store",), "devin"),
    CLINE: Connection(STDIO, "VS Code (Node)", ("NODE_EXTRA_CA_CERTS",)),
    ZED: Connection(STDIO, "native (Rust)", ("OS trust store",), "zed"),
    OPENCODE: Connection(STDIO, "Bun", ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"), "opencode",
                         "opencode mcp list"),
    GEMINI: Connection(STDIO, "Node 20", ("NODE_EXTRA_CA_CERTS",), "gemini", "gemini mcp list"),
    QWEN: Connection(STDIO, "Node 20", ("NODE_EXTRA_CA_CERTS",), "qwen", "qwen mcp list"),
    COPILOT: Connection(STDIO, "native", ("NODE_EXTRA_CA_CERTS",), "copilot"),
}
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


def gemini_dir(host: Host) -> PurePath:
    return host.home_path(".gemini")


def gemini_config(host: Host) -> PurePath:
    return gemini_dir(host) / "settings.json"


def qwen_dir(host: Host) -> PurePath:
    return host.home_path(".qwen")


def qwen_config(host: Host) -> PurePath:
    return qwen_dir(host) / "settings.json"


def copilot_dir(host: Host) -> PurePath:
    """Copilot CLI's home: ``$COPILOT_HOME`` or ``~/.copilot``."""
    value = host.env.get("COPILOT_HOME", "")
    return host.pure(value) if value else host.home_path(".copilot")


def copilot_config(host: Host) -> PurePath:
    return copilot_dir(host) / "mcp-config.json"


def codex_home(host: Host) -> PurePath:
    value = host.env.get("CODEX_HOME")
    return host.pure(value) if value else host.home_path(".codex")


def claude_desktop_dir(host: Host) -> PurePath:
    return claude_desktop_config(host).parent


def cursor_dir(host: Host) -> PurePath:
    return host.home_path(".cursor")


def windsurf_dir(host: Host) -> PurePath:
    return host.home_path(".codeium", "windsurf")


def devin_dir(host: Host) -> PurePath:
    return devin_config(host).parent


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
    GEMINI: gemini_config,
    QWEN: qwen_config,
    COPILOT: copilot_config,
}

# The directory whose presence says a client is installed (beside its CLI on PATH).
DETECT_DIRS: dict[str, Callable[[Host], PurePath]] = {
    CLAUDE_CODE: lambda host: host.home_path(".claude"),
    CODEX: codex_home,
    CLAUDE_DESKTOP: claude_desktop_dir,
    CURSOR: cursor_dir,
    WINDSURF: windsurf_dir,
    DEVIN: devin_dir,
    CLINE: cline_dir,
    ZED: zed_dir,
    OPENCODE: opencode_dir,
    GEMINI: gemini_dir,
    QWEN: qwen_dir,
    COPILOT: copilot_dir,
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
            return str(headers[AUTH_HEADER])
    for key in ("env", "environment"):
        env = entry.get(key)
        if isinstance(env, dict) and isinstance(env.get(BRIDGE_AUTH_ENV), str):
            return str(env[BRIDGE_AUTH_ENV])
        if isinstance(env, dict) and isinstance(env.get(AUTH_TOKEN_ENV), str):
            return bearer(env[AUTH_TOKEN_ENV])
    return None


@dataclass(frozen=True)
class JsonClient:
    """A client configured by one JSON file with an object of servers (``mcpServers`` unless
    ``key`` says otherwise)."""

    name: str
    path: Callable[[Host], PurePath]
    entry: Callable[[str], dict[str, Any]]  # the URL → the entry without headers
    stdio: Callable[[str], dict[str, Any]] = field(default=lambda command: {"command": command, "args": []})
    env_key: str = "env"  # where a stdio entry's environment goes
    envelope: dict[str, Any] = field(default_factory=dict)  # top-level keys a new file starts with
    key: str = "mcpServers"
    jsonc: bool = False  # comments allowed: edited as text, comments kept (velesmem.clients.jsonc)
    hint: str = ""  # shown when an entry was written: what the client may still need


GEMINI_TRUST_NOTE = ("Gemini CLI starts MCP servers only in trusted folders: trust a project when "
                     "gemini asks, or list it in ~/.gemini/trustedFolders.json")

JSON_CLIENTS: dict[str, JsonClient] = {
    CURSOR: JsonClient(CURSOR, cursor_config, lambda url: {"type": "http", "url": url}),
    WINDSURF: JsonClient(WINDSURF, windsurf_config, lambda url: {"serverUrl": url}),
    DEVIN: JsonClient(DEVIN, devin_config, lambda url: {"url": url, "transport": "http"},
                      envelope={"version": 1}),
    CLINE: JsonClient(CLINE, cline_config,
                      lambda url: {"type": "streamableHttp", "url": url, "disabled": False},
                      stdio=lambda command: {"command": command, "args": [], "disabled": False}),
    ZED: JsonClient(ZED, zed_config, lambda url: {"url": url}, key="context_servers", jsonc=True),
    OPENCODE: JsonClient(OPENCODE, opencode_config,
                         lambda url: {"type": "remote", "url": url, "enabled": True}, key="mcp",
                         stdio=lambda command: {"type": "local", "command": [command], "enabled": True},
                         env_key="environment", jsonc=True,
                         envelope={"$schema": "https://opencode.ai/config.json"}),
    GEMINI: JsonClient(GEMINI, gemini_config, lambda url: {"httpUrl": url}, jsonc=True,
                       hint=GEMINI_TRUST_NOTE),
    QWEN: JsonClient(QWEN, qwen_config, lambda url: {"httpUrl": url}, jsonc=True),
    COPILOT: JsonClient(COPILOT, copilot_config,
                        lambda url: {"type": "http", "url": url, "tools": ["*"]},
                        stdio=lambda command: {"type": "local", "command": command, "args": [],
                                               "tools": ["*"]},
                        hint="Copilot CLI opens MCP servers once you are logged in to GitHub"),
}


def trust_hint(name: str, ca: str) -> str:
    """What an HTTPS entry of ``name`` still needs: the CA in the variable its runtime reads."""
    conn = CONNECTIONS[name]
    variables = [v for v in conn.trust if v.isupper()]
    if not variables:
        return (f"{name} ({conn.runtime}) verifies TLS against the OS trust store: add the CA there "
                f"(velesdb-memory trust-ca), or use the default stdio entry")
    either = " or ".join(f"{v}={ca}" for v in variables)
    return f"{name} ({conn.runtime}) must be started with {either} in its environment"


def stdio_entry(name: str, command: str, token: str = "") -> dict[str, Any]:
    """The stdio entry of a file-configured client: ``command`` with no arguments (a token, when
    the daemon needs one, in the entry's environment)."""
    if name == CODEX:
        entry: dict[str, Any] = {"command": command, "args": []}
        key = "env"
    else:
        client = JSON_CLIENTS[name]
        entry, key = client.stdio(command), client.env_key
    return {**entry, key: {AUTH_TOKEN_ENV: token}} if token else entry


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
            return str(entry[key])
    args = entry.get("args")
    if isinstance(args, list):
        return next((a for a in args if isinstance(a, str) and a.startswith(("https://", "http://"))), None)
    return None


def entry_command(entry: Any) -> str | None:
    """The command a stdio entry runs, in any client's shape (None for a URL or bridge entry)."""
    if not isinstance(entry, dict) or entry_url(entry) is not None:
        return None
    command = entry.get("command")
    if isinstance(command, list) and command and isinstance(command[0], str):
        return command[0]  # opencode
    if isinstance(command, dict) and isinstance(command.get("path"), str):
        return str(command["path"])  # Zed's older shape
    return command if isinstance(command, str) else None


def entry_target(entry: Any) -> str | None:
    """What an entry points at: its URL, else its stdio command."""
    return entry_url(entry) or entry_command(entry)


def stdio_command(argv0: str | None = None, executable: str | None = None,
                  windows: bool | None = None) -> str | None:
    """The absolute path of the installed ``velesdb-memory`` script: beside the running Python (the
    venv's bin), else ``argv0`` when that is the script itself. No shell, no PATH lookup."""
    import os
    import sys

    windows = os.name == "nt" if windows is None else windows
    name = "velesdb-memory.exe" if windows else "velesdb-memory"
    beside = os.path.join(os.path.dirname(os.path.abspath(executable or sys.executable)), name)
    if os.path.isfile(beside):
        return beside
    argv0 = sys.argv[0] if argv0 is None else argv0
    if argv0 and os.path.basename(argv0).lower() in (name, "velesdb-memory") and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    return None

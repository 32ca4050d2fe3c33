"""Wire (or unwire) every installed client to the daemon and report one Outcome per client.

By default each client gets the stdio entry (``catalog.CONNECTIONS``): the absolute path of the
installed ``velesdb-memory``, which attaches to the daemon. ``transport="http"`` writes the HTTPS
URL instead, with the CA variable the client's runtime reads in the Outcome. A client that is not
installed (no CLI on PATH, no config directory) is skipped; ``--uninstall`` deletes a config file
that held nothing but our entry.

File-based clients are merged through ``velesmem.clients.files`` / ``tomlfile``; Claude Code and
Codex go through their own CLIs when present; Claude Desktop gets the mcp-remote stdio bridge,
written only after Node itself fetched ``/health`` with strict TLS.

With a bearer token (``WireRequest.token``) every entry carries the Authorization header in its
client's shape (``velesmem.clients.catalog``); re-wiring without one keeps the header an entry
already has, so re-running an installer never locks a client out. A file that receives a token is
made readable by its owner only, and the token never appears in an Outcome.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velesmem.clients import catalog, claude_hooks, node
from velesmem.clients.catalog import SERVER_NAME
from velesmem.clients import jsonc
from velesmem.clients.files import (ConfigRefused, get_json_entry, read_bytes, remove_json_entry,
                                    upsert_json_entry)
from velesmem.clients.host import Host
from velesmem.clients.jsonc import Location, get_jsonc_entry, remove_jsonc_entry, upsert_jsonc_entry
from velesmem.clients.outcome import Outcome
from velesmem.clients.tomlfile import get_toml_entry, remove_toml_entry, upsert_toml_entry

CLI_TIMEOUT_S = 60.0
INSECURE_ENV = "NODE_TLS_REJECT_UNAUTHORIZED"


@dataclass(frozen=True)
class WireRequest:
    """What to wire: the daemon URL, its CA certificate, clients to leave alone, or uninstall."""

    url: str
    ca_cert: str
    skip: frozenset[str] = field(default_factory=frozenset)
    uninstall: bool = False
    hooks: bool = True  # Claude Code's session hooks in ~/.claude/settings.json (with claude-code)
    hook_python: str = field(default_factory=lambda: sys.executable)  # what the hooks run
    token: str = field(default="", repr=False)  # a bearer token to send (velesdb-memory token)
    transport: str = catalog.STDIO  # stdio (the default) or http: the entry file-based clients get
    command: str = field(default_factory=lambda: catalog.stdio_command() or "")  # the stdio entry

    @property
    def stdio(self) -> bool:
        return self.transport == catalog.STDIO

    @property
    def target(self) -> str:
        """What our entry points at: the stdio command, or the URL."""
        return self.command if self.stdio else self.url

    @property
    def health_url(self) -> str:
        base = self.url.rsplit("/mcp", 1)[0] if self.url.endswith("/mcp") else self.url.rstrip("/")
        return base + "/health"


def wire_clients(request: WireRequest, host: Host | None = None,
                 clock: Callable[[], float] = time.time) -> list[Outcome]:
    """One Outcome per known client, in ``catalog.CLIENTS`` order."""
    host = host or Host.current()
    outcomes = []
    for name in catalog.CLIENTS:
        if name in request.skip:
            outcomes.append(Outcome(name, "skipped", "--skip-client"))
            continue
        try:
            outcomes.append(_step(name, request, host, clock))
        except ConfigRefused as exc:
            path = str(catalog.CONFIG_PATHS[name](host))
            outcomes.append(Outcome(name, "refused", exc.message, path=path))
        except OSError as exc:  # permissions, a full disk, a directory where a file should be
            path = str(catalog.CONFIG_PATHS[name](host))
            outcomes.append(Outcome(name, "failed", f"{type(exc).__name__}: {exc}", path=path))
        if name == catalog.CLAUDE_CODE and request.hooks:
            outcomes.append(_claude_code_hooks(request, host, clock))
    return outcomes


NO_COMMAND = ("no velesdb-memory script beside this Python (the stdio entry must be its absolute "
              "path): run the installed velesdb-memory, or wire --transport http")
CLAUDE_HOOKS = "claude-code-hooks"  # reported after claude-code, skipped with it


def _step(name: str, request: WireRequest, host: Host, clock: Callable[[], float]) -> Outcome:
    """One client's wiring, once we know it is on this machine and have a command to write."""
    if not request.uninstall and not installed(name, host):
        return Outcome(name, "skipped", f"not installed ({absence(name, host)})")
    if not request.uninstall and request.stdio and not request.command and name != catalog.CLAUDE_DESKTOP:
        return Outcome(name, "failed", NO_COMMAND)
    return _STEPS[name](request, host, clock)


def _claude_code_hooks(request: WireRequest, host: Host, clock: Callable[[], float]) -> Outcome:
    """SessionStart / PreCompact / Stop hooks in Claude Code's settings.json (docs/agents.md)."""
    path = host.local(claude_hooks.settings_path(host))
    if not request.uninstall and not claude_hooks.claude_code_present(host, lambda n: _which(host, n)):
        return Outcome(CLAUDE_HOOKS, "skipped", "Claude Code not found (no claude CLI, no ~/.claude)")
    try:
        result = claude_hooks.wire_hooks(path, request.hook_python, uninstall=request.uninstall,
                                         windows=host.is_windows, clock=clock)
    except ConfigRefused as exc:
        return Outcome(CLAUDE_HOOKS, "refused", exc.message, path=str(path))
    except OSError as exc:
        return Outcome(CLAUDE_HOOKS, "failed", f"{type(exc).__name__}: {exc}", path=str(path))
    detail = ("session-start, pre-compact and stop run velesdb-memory hook; takes effect in new "
              "sessions" if result[0] in ("added", "updated") else "")
    return _file_outcome(CLAUDE_HOOKS, path, result, detail)


def _file_outcome(name: str, path: Path, result: tuple[str, Path | None], detail: str = "") -> Outcome:
    action, saved = result
    return Outcome(name, action, detail, path=str(path), backup=str(saved) if saved else None)


def _auth(request: WireRequest, current: Any) -> str | None:
    """The Authorization value to write: the new token's, else the one our entry has."""
    return catalog.bearer(request.token) if request.token else catalog.entry_auth(current)


def _private(path: Path) -> None:
    """Make a config file about to receive a token readable by its owner only (before the
    write, so the atomic replace keeps that mode)."""
    if os.name != "posix":
        return
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return  # new files are created owner-only
    if mode & 0o077:
        os.chmod(path, mode & 0o700)


def _token_of(auth: str | None) -> str:
    """The bare token of an Authorization value ("" without one)."""
    return auth.partition(" ")[2] if auth else ""


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')


def _only_ours_left(path: Path, key: str, envelope: dict[str, Any], toml: bool = False) -> bool:
    """After our entry's removal: the file holds nothing else (an empty server table, the
    envelope we start files with, no comments) — an empty shell we leave nobody."""
    raw = read_bytes(path)
    if raw is None:
        return False
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        if toml:
            if any(line.strip().startswith("#") for line in text.splitlines()):
                return False
            data: Any = tomllib.loads(text)
        else:
            bare = _STRINGS.sub('""', text)
            if "//" in bare or "/*" in bare:
                return False
            data = jsonc.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return False
    if not isinstance(data, dict):
        return False
    rest = {k: v for k, v in data.items()
            if not (k in envelope and envelope[k] == v) and not (k == key and v == {})}
    return not rest


def _removed(name: str, path: Path, result: tuple[str, Path | None], key: str = "mcpServers",
             envelope: dict[str, Any] | None = None, toml: bool = False) -> Outcome:
    """The Outcome of removing our entry; the file (and the backup of it) deleted when nothing
    but our entry was in it."""
    action, saved = result
    if action == "removed" and _only_ours_left(path, key, envelope or {}, toml):
        path.unlink()
        if saved is not None:
            saved.unlink(missing_ok=True)
        return Outcome(name, "removed", "deleted the file: it held only our entry", path=str(path))
    return _file_outcome(name, path, result)


def _redact(text: str, auth: str | None) -> str:
    """``text`` with the token of ``auth`` replaced by ``<token>``."""
    secret = auth.partition(" ")[2] if auth else ""
    return text.replace(secret, "<token>") if secret else text


def _json_client(name: str) -> Callable[[WireRequest, Host, Callable[[], float]], Outcome]:
    return lambda request, host, clock: _json_wire(catalog.JSON_CLIENTS[name], request, host, clock)


def _json_wire(client: catalog.JsonClient, request: WireRequest, host: Host,
               clock: Callable[[], float]) -> Outcome:
    name = client.name
    path = host.local(client.path(host))
    where = Location(client.key, SERVER_NAME)
    if request.uninstall:
        removed = (remove_jsonc_entry(path, where, clock=clock) if client.jsonc
                   else remove_json_entry(path, SERVER_NAME, key=client.key, clock=clock))
        return _removed(name, path, removed, client.key, client.envelope)
    auth = _auth(request, read_entry(name, host))
    if request.stdio:
        entry = catalog.stdio_entry(name, request.command, _token_of(auth))
        hint = client.hint
    else:
        entry = catalog.with_headers(client.entry(request.url), auth)
        hint = "; ".join(filter(None, [catalog.trust_hint(name, request.ca_cert), client.hint]))
    if auth:
        _private(path)
    if client.jsonc:
        result = upsert_jsonc_entry(path, where, entry, envelope=client.envelope, clock=clock)
    else:
        result = upsert_json_entry(path, SERVER_NAME, entry, key=client.key, envelope=client.envelope,
                                   clock=clock)
    return _file_outcome(name, path, result, hint if result[0] != "unchanged" else "")


def read_entry(name: str, host: Host) -> Any:
    """Our entry in a client's config as it is on disk (None when absent); ConfigRefused when
    the file cannot be read. Claude Code's is read from ``~/.claude.json``."""
    path = host.local(catalog.CONFIG_PATHS[name](host))
    if name == catalog.CODEX:
        return get_toml_entry(path, SERVER_NAME)
    client = catalog.JSON_CLIENTS.get(name)
    if client is not None and client.jsonc:
        return get_jsonc_entry(path, Location(client.key, SERVER_NAME))
    return get_json_entry(path, SERVER_NAME, key=client.key if client else "mcpServers")


def _claude_desktop(request: WireRequest, host: Host, clock: Callable[[], float]) -> Outcome:
    name = catalog.CLAUDE_DESKTOP
    path = host.local(catalog.claude_desktop_config(host))
    if request.uninstall:
        return _removed(name, path, remove_json_entry(path, SERVER_NAME, clock=clock))
    if host.env.get(INSECURE_ENV) == "0":
        return Outcome(name, "refused", f"{INSECURE_ENV}=0 is set, which turns TLS verification off; "
                       f"unset it and re-run (the bridge verifies against the local CA instead)",
                       path=str(path))
    if not Path(request.ca_cert).is_file():
        return Outcome(name, "failed", f"the daemon's CA {request.ca_cert} does not exist yet: start the "
                       f"daemon once (it creates the CA), then re-run with --wire-only", path=str(path))
    tools = node.find_node(host)
    connector = (f"add it by hand instead: Claude Desktop → Settings → Connectors → Add custom "
                 f"connector, paste {request.url} (needs the CA trusted: velesdb-memory trust-ca)")
    if tools is None or not (tools.npx or tools.mcp_remote):
        return Outcome(name, "skipped", "Node.js (node + npx) not found, so the mcp-remote bridge "
                       f"cannot run — install Node and re-run with --wire-only, or {connector}",
                       path=str(path))
    problem = node.probe_health(host, tools, request.health_url, request.ca_cert)
    if problem is not None:
        return Outcome(name, "failed", f"Node could not fetch {request.health_url} with "
                       f"NODE_EXTRA_CA_CERTS={request.ca_cert}: {problem}", path=str(path))
    auth = _auth(request, get_json_entry(path, SERVER_NAME))
    if auth:
        _private(path)
    result = upsert_json_entry(path, SERVER_NAME, desktop_entry(host, tools, request, auth),
                               clock=clock)
    return _file_outcome(name, path, result, "restart Claude Desktop fully (Quit, not close) to load it"
                         if result[0] != "unchanged" else "")


def desktop_entry(host: Host, tools: node.NodeTools, request: WireRequest,
                  auth: str | None = None) -> dict[str, Any]:
    """The stdio entry Desktop spawns: mcp-remote over HTTPS, strict TLS via the local CA. An
    ``auth`` value travels in the env block, named in ``--header`` without spaces (mcp-remote's
    README: some clients mangle spaces inside args), and stays out of the process arguments."""
    tail = [request.url, "--transport", "http-only"]
    if auth:
        tail += ["--header", f"{catalog.AUTH_HEADER}:${{{catalog.BRIDGE_AUTH_ENV}}}"]
    if tools.mcp_remote:
        command, args = tools.mcp_remote, tail
    else:  # the bridge version the tests run, never whatever is newest on the day Desktop starts
        assert tools.npx is not None
        command, args = tools.npx, ["-y", node.MCP_REMOTE_PACKAGE, *tail]
    env = node.bridge_env(host, tools, request.ca_cert)
    if auth:
        env[catalog.BRIDGE_AUTH_ENV] = auth
    return {"command": command, "args": args, "env": env}


def _run_cli(argv: list[str], host: Host, auth: str | None = None) -> str | None:
    """None on success, else the CLI's complaint (with any token in it redacted)."""
    try:
        done = subprocess.run(argv, env=dict(host.env), capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _redact(f"{' '.join(argv)}: {exc}", auth)
    if done.returncode != 0:
        said = _redact(done.stderr.strip() or done.stdout.strip(), auth)[-300:]
        return _redact(f"`{' '.join(argv[1:])}` exited {done.returncode}: ", auth) + said
    return None


def _via_cli(name: str, request: WireRequest, host: Host, cli: str | None, current: Any,
             add: list[str], remove: list[str], path: Path, hint: str,
             auth: str | None = None) -> Outcome:
    """Add/remove our entry with the client's own CLI, skipping work the config shows is done
    (the URL and the Authorization value ``auth`` already there)."""
    if request.uninstall:
        if current is None:
            return Outcome(name, "absent", path=str(path))
        if cli is None:
            return Outcome(name, "skipped", f"its CLI is not on PATH; remove by hand: {' '.join(remove)}")
        problem = _run_cli([cli, *remove[1:]], host)
        return Outcome(name, "failed", problem) if problem else Outcome(name, "removed", path=str(path))
    if catalog.entry_target(current) == request.target and catalog.entry_auth(current) == auth:
        return Outcome(name, "unchanged", path=str(path))
    if cli is None:
        shown = " ".join(f'"{a}"' if " " in a else a for a in add)
        return Outcome(name, "skipped", f"`{add[0]}` CLI not found on PATH; once installed run: "
                       f"{_redact(shown, auth)}")
    if current is not None:
        problem = _run_cli([cli, *remove[1:]], host, auth)
        if problem:
            return Outcome(name, "failed", problem)
    problem = _run_cli([cli, *add[1:]], host, auth)
    if problem:
        return Outcome(name, "failed", problem)
    return Outcome(name, "added" if current is None else "updated", hint, path=str(path))


def _which(host: Host, name: str) -> str | None:
    return shutil.which(name, path=host.env.get("PATH", ""))


def _claude_code(request: WireRequest, host: Host, clock: Callable[[], float]) -> Outcome:
    path = host.local(catalog.claude_code_config(host))
    current = get_json_entry(path, SERVER_NAME)
    auth = None if request.uninstall else _auth(request, current)
    add = claude_add_command(request, auth)
    remove = ["claude", "mcp", "remove", "--scope", "user", SERVER_NAME]
    hint = "" if request.stdio else catalog.trust_hint(catalog.CLAUDE_CODE, request.ca_cert)
    return _via_cli(catalog.CLAUDE_CODE, request, host, _which(host, "claude"), current, add, remove,
                    path, hint, auth)


def claude_add_command(request: WireRequest, auth: str | None = None) -> list[str]:
    """The ``claude mcp add`` line that writes our user-scope entry (stdio by default)."""
    if request.stdio:
        env = ["-e", f"{catalog.AUTH_TOKEN_ENV}={_token_of(auth)}"] if auth else []
        return ["claude", "mcp", "add", "--scope", "user", SERVER_NAME, *env, "--", request.command]
    add = ["claude", "mcp", "add", "--transport", "http", "--scope", "user", SERVER_NAME, request.url]
    if auth:  # last: Claude Code's --header takes several values
        add += ["--header", f"{catalog.AUTH_HEADER}: {auth}"]
    return add


def _codex(request: WireRequest, host: Host, clock: Callable[[], float]) -> Outcome:
    name = catalog.CODEX
    path = host.local(catalog.codex_config(host))
    cli = _which(host, "codex")
    current = get_toml_entry(path, SERVER_NAME)
    auth = None if request.uninstall else _auth(request, current)
    # No CLI, or a header to write (`codex mcp add` sets none): edit ~/.codex/config.toml
    # ourselves, same rules as the JSON files.
    if cli is None or auth:
        if request.uninstall:
            return _removed(name, path, remove_toml_entry(path, SERVER_NAME, clock=clock), toml=True)
        if catalog.entry_target(current) == request.target and catalog.entry_auth(current) == auth:
            return Outcome(name, "unchanged", path=str(path))
        if auth:
            _private(path)
        entry = (catalog.stdio_entry(name, request.command, _token_of(auth)) if request.stdio
                 else catalog.codex_entry(request.url, auth))
        return _file_outcome(name, path, upsert_toml_entry(path, SERVER_NAME, entry, clock=clock),
                             "" if request.stdio else catalog.trust_hint(name, request.ca_cert))
    add = (["codex", "mcp", "add", SERVER_NAME, "--", request.command] if request.stdio
           else ["codex", "mcp", "add", SERVER_NAME, "--url", request.url])
    remove = ["codex", "mcp", "remove", SERVER_NAME]
    return _via_cli(name, request, host, cli, current, add, remove, path,
                    "" if request.stdio else catalog.trust_hint(name, request.ca_cert))


_STEPS: dict[str, Callable[[WireRequest, Host, Callable[[], float]], Outcome]] = {
    catalog.CLAUDE_CODE: _claude_code,
    catalog.CODEX: _codex,
    catalog.CLAUDE_DESKTOP: _claude_desktop,
    **{name: _json_client(name) for name in catalog.JSON_CLIENTS},
}


def installed(name: str, host: Host) -> bool:
    """The client is on this machine: its CLI on PATH, its config directory, or its config file."""
    if name == catalog.CLAUDE_CODE:
        return claude_hooks.claude_code_present(host, lambda n: _which(host, n))
    cli = catalog.CONNECTIONS[name].cli
    return ((cli is not None and _which(host, cli) is not None)
            or host.local(catalog.DETECT_DIRS[name](host)).is_dir()
            or host.local(catalog.CONFIG_PATHS[name](host)).exists())


def absence(name: str, host: Host) -> str:
    """Why ``installed`` said no, in the user's words."""
    cli = catalog.CONNECTIONS[name].cli
    where = catalog.DETECT_DIRS[name](host)
    if name == catalog.CLAUDE_CODE:
        return "no claude CLI on PATH, no ~/.claude.json"
    return (f"no {cli} CLI on PATH, no {where}" if cli else f"no {where}")


def wired_entries(host: Host, names: Iterable[str] = catalog.CLIENTS) -> dict[str, tuple[Any, str, str | None]]:
    """Per installed client: (our entry or None, config path, error reading it or None)."""
    report: dict[str, tuple[Any, str, str | None]] = {}
    for name in names:
        if not installed(name, host):
            continue
        path = host.local(catalog.CONFIG_PATHS[name](host))
        try:
            report[name] = (read_entry(name, host), str(path), None)
        except ConfigRefused as exc:
            report[name] = (None, str(path), exc.message)
    return report


def wired_urls(host: Host, names: Iterable[str] = catalog.CLIENTS) -> dict[str, tuple[str | None, str, str | None]]:
    """Per installed client: (URL its entry points at or None, config path, error reading it or None)."""
    report: dict[str, tuple[str | None, str, str | None]] = {}
    for name in names:
        if not installed(name, host):
            continue
        path = host.local(catalog.CONFIG_PATHS[name](host))
        try:
            report[name] = (catalog.entry_url(read_entry(name, host)), str(path), None)
        except ConfigRefused as exc:
            report[name] = (None, str(path), exc.message)
    return report

"""Ask each agent CLI whether it really connects to our server, with its own model-free check.

``doctor`` trusts no config file: a client is "connected" only when its CLI opened an MCP session
to velesdb-memory (``claude mcp list``, ``gemini mcp list``, ``qwen mcp list``, ``opencode mcp
list``, Codex's ``app-server`` ``mcpServerStatus/list``). A client with no such check, or whose CLI
is not on PATH, is "not verifiable".
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from velesmem.clients import catalog
from velesmem.clients.host import Host

PROBE_TIMEOUT_S = 90.0  # a CLI starts every configured server before it answers
CONNECTED, FAILED, NOT_VERIFIABLE = "connected", "failed", "not verifiable"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NAME = re.escape(catalog.SERVER_NAME)


@dataclass(frozen=True)
class Probe:
    """What a client's own check said about our server: connected, failed or not verifiable."""

    client: str
    state: str
    reason: str = ""

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED


def _clean(text: str) -> str:
    return _ANSI.sub("", text)


def _run(argv: list[str], host: Host, cwd: str | None) -> tuple[int, str]:
    """Exit code and stdout+stderr (ANSI stripped); -1 with the reason when it could not run."""
    try:
        done = subprocess.run(argv, env=dict(host.env), cwd=cwd, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, f"`{' '.join(argv[-3:])}` gave no answer within {PROBE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return -1, f"could not run {argv[0]}: {exc}"
    return done.returncode, _clean(done.stdout + "\n" + done.stderr)


def _our_line(output: str) -> str | None:
    """The line of a ``mcp list`` output that names our server (None when it is not listed)."""
    for line in output.splitlines():
        if re.search(rf"(^|[\s●✓✗✘○]){_NAME}(:|\s|$)", line.strip()):
            return line.strip()
    return None


def _claude_reason(host: Host) -> str:
    """The last error Claude Code logged for our server (its list prints none)."""
    cache = Path(str(host.home_path(".cache", "claude-cli-nodejs")))
    logs = sorted(cache.glob(f"*/mcp-logs-{catalog.SERVER_NAME}/*"), key=lambda p: p.stat().st_mtime)
    for log in reversed(logs[-3:]):
        try:
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if "error" in line.lower():
                try:
                    record = json.loads(line)
                    return str(record.get("error") or record.get("debug") or line)[:300]
                except ValueError:
                    return line[:300]
    return ""


def _list_check(client: str, argv: list[str], host: Host, cwd: str | None,
                good: tuple[str, ...], explain: Callable[[str], str] | None = None) -> Probe:
    """Run a ``<cli> mcp list`` and read our server's line."""
    code, output = _run(argv, host, cwd)
    if code == -1:
        return Probe(client, FAILED, output)
    line = _our_line(output)
    if line is None:
        return Probe(client, FAILED, f"`{' '.join(argv)}` does not list {catalog.SERVER_NAME}")
    lowered = line.lower()
    if any(word in lowered for word in good) and "disconnected" not in lowered:
        return Probe(client, CONNECTED)
    reason = explain(line) if explain else ""
    return Probe(client, FAILED, reason or line)


def _gemini_reason(home_dir: str) -> Callable[[str], str]:
    def explain(line: str) -> str:
        if "disabled" in line.lower():
            return (f"{line} — this folder is not trusted: trust it when the CLI asks, or list it "
                    f"in ~/{home_dir}/trustedFolders.json")
        return line
    return explain


def _codex(host: Host, cli: str, cwd: str | None) -> Probe:
    """``codex app-server`` over JSON-RPC: initialize, initialized, ``mcpServerStatus/list``."""
    try:
        proc = subprocess.Popen([cli, "app-server"], env=dict(host.env), cwd=cwd, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    except OSError as exc:
        return Probe(catalog.CODEX, FAILED, f"could not run {cli}: {exc}")
    watchdog = threading.Timer(PROBE_TIMEOUT_S, proc.kill)  # ends the read loop below at the deadline
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"clientInfo": {"name": "velesdb-memory-doctor", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "mcpServerStatus/list", "params": {}},
        ]
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") != 2:
                continue
            if "error" in message:
                return Probe(catalog.CODEX, FAILED, str(message["error"].get("message", message["error"])))
            for server in (message.get("result") or {}).get("data") or []:
                if server.get("name") == catalog.SERVER_NAME:
                    if server.get("serverInfo"):
                        return Probe(catalog.CODEX, CONNECTED)
                    return Probe(catalog.CODEX, FAILED, str(server.get("toolsError") or "no session")[:300])
            return Probe(catalog.CODEX, FAILED, f"codex does not list {catalog.SERVER_NAME}")
        if not watchdog.is_alive():
            return Probe(catalog.CODEX, FAILED, f"no answer within {PROBE_TIMEOUT_S:.0f} s")
        return Probe(catalog.CODEX, FAILED, f"codex app-server exited {proc.poll()} before answering")
    finally:
        watchdog.cancel()
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def probe(client: str, host: Host, cwd: str | None = None) -> Probe:
    """Run ``client``'s own connection check for our server (``cwd``: the folder it runs in)."""
    conn = catalog.CONNECTIONS[client]
    if not conn.check:
        why = ("Copilot CLI opens MCP servers only after a GitHub login" if client == catalog.COPILOT
               else f"{client} has no command-line connection check")
        return Probe(client, NOT_VERIFIABLE, why)
    cli = shutil.which(conn.cli or "", path=host.env.get("PATH", "")) if conn.cli else None
    if cli is None:
        return Probe(client, NOT_VERIFIABLE, f"its CLI `{conn.cli}` is not on PATH")
    if client == catalog.CODEX:
        return _codex(host, cli, cwd)
    if client == catalog.CLAUDE_CODE:
        result = _list_check(client, [cli, "mcp", "list"], host, cwd, ("connected",))
        if not result.connected:
            reason = _claude_reason(host)
            return Probe(client, FAILED, f"{result.reason}" + (f" — {reason}" if reason else ""))
        return result
    if client == catalog.GEMINI:
        return _list_check(client, [cli, "mcp", "list"], host, cwd, ("connected",), _gemini_reason(".gemini"))
    if client == catalog.QWEN:
        return _list_check(client, [cli, "mcp", "list"], host, cwd, ("connected",), _gemini_reason(".qwen"))
    return _list_check(client, [cli, "mcp", "list"], host, cwd, ("connected",))

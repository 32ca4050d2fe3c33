"""``doctor``'s checks: one line per fact about the install, each problem with its fix.

Daemon up? (strict TLS against the CA) · its embedder and corpus (``memory_status`` over MCP) ·
the CA trusted by Python (CA file, and the OS store) and by Node (``NODE_EXTRA_CA_CERTS``) ·
each installed client wired, and whether it really connects (its own CLI's model-free check,
``velesmem.clients.probe``; "not verifiable" where it has none, never "ok" from the file alone).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from velesmem.clients import catalog, node
from velesmem.clients.host import Host
from velesmem.service import health
from velesmem.service.managers import managers_for
from velesmem.service.trust import is_trusted, manual_command

OK, WARN, FAIL, INFO = "ok", "warn", "FAIL", "--"


@dataclass(frozen=True)
class Check:
    status: str
    text: str
    fix: str = ""

    def line(self) -> str:
        head = f"[{self.status:^4}] {self.text}"
        return head + (f"\n         fix: {self.fix}" if self.fix else "")


def diagnose(host: Host, port: int, tls_dir: str, store: str | None = None) -> list[Check]:
    """Every check, in screen order."""
    ca = str(Path(tls_dir) / "ca-cert.pem")
    url = f"https://127.0.0.1:{port}/mcp"
    checks = [_service(host)]
    status = health.check_health("127.0.0.1", port, ca)
    checks.append(_daemon(status, port, ca, tls_dir))
    if status.ok:
        checks.append(_memory(url, ca, status.store or store, host.env.get("VELESDB_MEMORY_AUTH_TOKEN", "")))
        if store and status.store and Path(status.store) != Path(store).resolve():
            checks.append(Check(WARN, f"the daemon serves {status.store}, but this machine's settings name "
                                f"{store}: a stdio client would open that one instead of attaching",
                                "unset VELESDB_MEMORY_PATH, or re-run the installer with --store"))
        checks.append(Check(OK, f"Python trusts the CA: strict TLS request verified against {ca}"))
        checks.append(_os_trust(host, ca))
        checks.append(_node(host, url, ca))
    checks += _clients(host, url, ca)
    return checks


def _service(host: Host) -> Check:
    found = [m for m in managers_for(host) if m.installed()]
    if not found:
        return Check(INFO, "no autostart service installed", "velesdb-memory service install "
                     "(or run installers/install-memory-daemon.sh)")
    manager = found[0]
    if manager.is_running():
        return Check(OK, f"service: {manager.describe()}, running")
    return Check(WARN, f"service: {manager.name} installed but not running",
                 "velesdb-memory service install --force-restart")


def _daemon(status: health.Health, port: int, ca: str, tls_dir: str) -> Check:
    where = f"https://127.0.0.1:{port}/health"
    if status.ok:
        return Check(OK, f"daemon answers {where} (strict TLS, CA {ca})")
    if status.kind == "no-ca":
        return Check(FAIL, f"no CA at {ca}: the daemon never ran with this TLS dir",
                     f"start it: velesdb-memory service install --tls-dir {tls_dir}")
    if status.kind == "tls":
        return Check(FAIL, f"the daemon on port {port} presents a certificate not signed by {ca} "
                     f"({status.detail}) — it runs with another TLS dir, or the port belongs to another "
                     f"program", f"velesdb-memory doctor --tls-dir <the daemon's TLS dir>, or restart it: "
                     f"velesdb-memory service install --tls-dir {tls_dir} --force-restart")
    if status.kind == "down":
        return Check(FAIL, f"no daemon answers {where} ({status.detail})",
                     "start it: velesdb-memory service install (or velesdb-memory --http)")
    return Check(FAIL, f"{where} answered unexpectedly: {status.detail}",
                 f"is port {port} another program? velesdb-memory service install --port <other>")


def _memory(url: str, ca: str, store: str | None, token: str = "") -> Check:
    from velesmem.service.mcpprobe import McpProbeError, call_tool

    try:
        status = call_tool(url, ca, "memory_status", token=token)
    except (McpProbeError, OSError, ValueError) as exc:
        return Check(WARN, f"memory_status over MCP failed: {exc}", "see the daemon's log")
    emb = status.get("embedder") or {}
    mem = status.get("memory") or {}
    where = f"store {store} · " if store else ""
    kind = "semantic" if emb.get("semantic") else "lexical (hash)"
    imported = mem.get("imported") or {}
    sources = (" · imported: " + ", ".join(f"{n} from {s}" for s, n in sorted(imported.items()))
               if isinstance(imported, dict) and imported else "")
    return Check(OK, f"{where}embedder {emb.get('model')} ({emb.get('dimension')} dims, {kind}) · "
                 f"{mem.get('facts')} facts, {mem.get('edges')} edges{sources}")


def _os_trust(host: Host, ca: str) -> Check:
    trusted, store = is_trusted(host, ca)
    if trusted:
        return Check(OK, f"the CA is trusted in the {store}")
    if trusted is None:
        return Check(INFO, f"cannot tell whether the {store} trusts the CA (its tool is missing)",
                     manual_command(host, ca))
    return Check(INFO, f"the CA is not trusted in the {store} (browsers and some apps use it)",
                 "velesdb-memory trust-ca")


def _node(host: Host, url: str, ca: str) -> Check:
    tools = node.find_node(host)
    if tools is None:
        return Check(WARN, "Node.js not found: Claude Desktop's mcp-remote bridge cannot run",
                     "install Node.js, then: velesdb-memory wire")
    problem = node.probe_health(host, tools, url.rsplit("/mcp", 1)[0] + "/health", ca)
    if problem is None:
        return Check(OK, f"Node trusts the CA via NODE_EXTRA_CA_CERTS={ca}")
    return Check(FAIL, f"Node cannot reach the daemon with NODE_EXTRA_CA_CERTS={ca}: {problem}",
                 "never set NODE_TLS_REJECT_UNAUTHORIZED=0; check the CA path, then: velesdb-memory wire")


def _clients(host: Host, url: str, ca: str) -> list[Check]:
    from velesmem.clients.wiring import WireRequest, claude_add_command, wired_entries

    command = catalog.stdio_command() or ""
    checks, unwired = [], []
    for name, (entry, path, error) in wired_entries(host).items():
        if error:
            checks.append(Check(FAIL, f"{name}: {error}", f"fix {path} by hand, then: velesdb-memory wire"))
            continue
        if catalog.entry_target(entry) is None:
            cli = catalog.CONNECTIONS[name].cli
            if name == catalog.CLAUDE_CODE and cli and not shutil.which(cli, path=host.env.get("PATH", "")):
                line = claude_add_command(WireRequest(url, ca, command=command))
                checks.append(Check(INFO, f"{name}: not wired, and its `claude` CLI is not on PATH",
                                    " ".join(line)))
            else:
                unwired.append(name)
            continue
        if name == catalog.CLAUDE_DESKTOP:
            wired = catalog.entry_url(entry)
            checks.append(_desktop_ca(host, name, path, url, ca) if wired == url else
                          Check(FAIL, f"{name}: wired to {wired}, but the daemon is {url} ({path})",
                                "velesdb-memory wire"))
            continue
        checks.append(_client(host, name, entry, path, url, ca))
    if unwired:
        checks.append(Check(INFO, f"not wired: {', '.join(unwired)}", "velesdb-memory wire "
                            "(or --skip-client them on purpose)"))
    return checks


def _client(host: Host, name: str, entry: object, path: str, url: str, ca: str) -> Check:
    """One wired client: its entry's target, then its own connection check."""
    from velesmem.clients import probe

    wired_url, command = catalog.entry_url(entry), catalog.entry_command(entry)
    if wired_url is not None and wired_url != url:
        return Check(FAIL, f"{name}: wired to {wired_url}, but the daemon is {url} ({path})",
                     "velesdb-memory wire")
    if command is not None and not Path(command).is_file():
        return Check(FAIL, f"{name}: runs {command}, which does not exist ({path})", "velesdb-memory wire")
    how = f"stdio {command}" if command else wired_url
    result = probe.probe(name, host)
    check = catalog.CONNECTIONS[name].check
    if result.state == probe.CONNECTED:
        return Check(OK, f"{name}: connected ({how}; `{check}`)")
    if result.state == probe.FAILED:
        if "trustedFolders.json" in result.reason:
            fix = (f"run {catalog.CONNECTIONS[name].cli} in this folder and trust it when asked "
                   f"(or add the folder to the trustedFolders.json named above)")
        elif wired_url:
            fix = ("velesdb-memory wire (the default stdio entry connects whatever the client "
                   f"trusts), or: {catalog.trust_hint(name, ca)}")
        else:
            fix = "velesdb-memory wire; if it persists, run the client's check by hand: " + check
        return Check(FAIL, f"{name}: wired ({how}) but `{check}` says: {result.reason}", fix)
    return Check(INFO, f"{name}: wired ({how}, {path}), not verifiable: {result.reason}")


def _desktop_ca(host: Host, name: str, path: str, url: str, ca: str) -> Check:
    if name == catalog.CLAUDE_DESKTOP:
        from velesmem.clients.files import get_json_entry

        entry = get_json_entry(Path(path), catalog.SERVER_NAME) or {}
        extra = (entry.get("env") or {}).get("NODE_EXTRA_CA_CERTS")
        if not extra or not Path(extra).is_file():
            return Check(FAIL, f"{name}: wired to {url} but NODE_EXTRA_CA_CERTS={extra} is missing",
                         "velesdb-memory wire")
    return Check(OK, f"{name}: wired to {url} ({path})")

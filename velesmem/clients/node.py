"""Find Node.js tools the way Claude Desktop will run them, and probe the daemon through Node.

The probe is exactly what the mcp-remote bridge does first: an ``https.get`` of ``/health``
verified against ``NODE_EXTRA_CA_CERTS`` (never with verification turned off).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import PurePath

from velesmem.clients.host import Host

PROBE_TIMEOUT_S = 20.0
# The Claude Desktop bridge, pinned: the version tests/node/package.json installs and the tests run.
MCP_REMOTE_VERSION = "0.15.1"
MCP_REMOTE_PACKAGE = f"mcp-remote@{MCP_REMOTE_VERSION}"
_PROBE_JS = r"""
const https = require('https');
const req = https.get(process.argv[1], { timeout: 10000 }, (res) => {
  let body = '';
  res.on('data', (c) => { body += c; });
  res.on('end', () => {
    if (res.statusCode === 200) { process.exit(0); }
    console.error('HTTP ' + res.statusCode + ' ' + body.slice(0, 200));
    process.exit(3);
  });
});
req.on('timeout', () => req.destroy(new Error('timed out after 10 s')));
req.on('error', (e) => { console.error((e.code ? e.code + ': ' : '') + e.message); process.exit(2); });
"""


@dataclass(frozen=True)
class NodeTools:
    """Absolute paths of ``node`` and, when present, ``npx`` and a global ``mcp-remote``."""

    node: str
    npx: str | None
    mcp_remote: str | None


def _which(host: Host, *names: str) -> str | None:
    path = host.env.get("PATH", "")
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return found
    return None


def find_node(host: Host) -> NodeTools | None:
    """Node tools on the host's PATH (``.cmd`` shims on Windows), or None without ``node``."""
    cmd = (lambda n: (f"{n}.cmd", n)) if host.is_windows else (lambda n: (n,))
    node = _which(host, *(("node.exe", "node") if host.is_windows else ("node",)))
    if node is None:
        return None
    npx_beside = shutil.which(cmd("npx")[0], path=str(PurePath(node).parent))
    return NodeTools(node=node, npx=npx_beside or _which(host, *cmd("npx")),
                     mcp_remote=_which(host, *cmd("mcp-remote")))


def bridge_env(host: Host, tools: NodeTools, ca_cert: str) -> dict[str, str]:
    """The env block of the Desktop entry: the CA, and a PATH holding Node's directory."""
    if host.is_windows:
        system32 = str(host.pure(host.env.get("SystemRoot", r"C:\Windows"), "System32"))
        parts, sep = [str(host.pure(tools.node).parent), system32], ";"
    else:
        parts, sep = [str(host.pure(tools.node).parent), "/usr/bin", "/bin"], ":"
    if tools.mcp_remote:
        parts.insert(1, str(host.pure(tools.mcp_remote).parent))
    seen: list[str] = []
    for part in parts:
        if part not in seen:
            seen.append(part)
    return {"NODE_EXTRA_CA_CERTS": ca_cert, "PATH": sep.join(seen)}


def probe_health(host: Host, tools: NodeTools, health_url: str, ca_cert: str) -> str | None:
    """None when Node fetches ``health_url`` with strict TLS against ``ca_cert``; else why not."""
    env = {k: v for k, v in host.env.items() if k in ("HOME", "USERPROFILE", "SystemRoot", "TMPDIR", "TEMP")}
    env.update(bridge_env(host, tools, ca_cert))
    try:
        done = subprocess.run([tools.node, "-e", _PROBE_JS, health_url], env=env, capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"node did not answer within {PROBE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return f"could not run {tools.node}: {exc}"
    if done.returncode == 0:
        return None
    return (done.stderr.strip() or done.stdout.strip() or f"node exited {done.returncode}")[-400:]

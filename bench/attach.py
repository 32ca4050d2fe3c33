"""stdio attach: from exec to the relayed ``initialize`` reply, and the memory it takes, for
``velesdb-memory`` (no arguments: the light stdio relay) beside ``mcp-remote`` (the Claude Desktop
bridge, pinned in tests/node: ``npm ci`` there), both against the same running daemon in the
same run.

Each run spawns the client fresh, writes ``initialize`` on its stdin at once and times the reply
on stdout; then ``notifications/initialized`` and ``tools/list`` (a real call through it), and
reads its resident memory (now and peak, /proc) before closing stdin. Contenders alternate run by
run so a busy minute of the shared machine hits both. Prints medians (and min/max) over ``--runs``
and writes bench/results/attach.json; ``bench/render.py`` puts it in docs/benchmarks.md.

Targets (issue 23): ≤ 0.3 s to the relayed ``initialize`` reply, ≤ 40 MiB RSS.

Run: python3 bench/attach.py [--runs 10]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load_average, machine, median, print_table, write_results
from _daemon import CHECKOUT, daemon_env, memory_mib, start_daemon

MCP_REMOTE = CHECKOUT / "tests" / "node" / "node_modules" / ".bin" / "mcp-remote"
TARGET_INIT_S = 0.3
TARGET_RSS_MIB = 40.0
REPLY_DEADLINE_S = 30.0
EXIT_DEADLINE_S = 5.0
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "velesmem-bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


class Peer:
    """A stdio MCP client process read line by line with deadlines."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        with log.open("ab") as err:
            self.t0 = time.perf_counter()
            self.proc = subprocess.Popen(argv, env=env, cwd=CHECKOUT, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err)
        self.buffer = b""
        self.selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def reply(self, request_id: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        end = time.monotonic() + REPLY_DEADLINE_S
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip().startswith(b"{"):
                    message = json.loads(line)
                    if message.get("id") == request_id:
                        return message
            if time.monotonic() > end or not self.selector.select(end - time.monotonic()):
                raise SystemExit(f"no reply to request {request_id} within {REPLY_DEADLINE_S} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit(f"the client exited ({self.proc.wait()}) before replying")
            self.buffer += chunk

    def close(self) -> bool:
        """Close stdin; True when the process exited by itself."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.selector.close()
        self.proc.stdin.close()
        try:
            self.proc.wait(EXIT_DEADLINE_S)
            exited = True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            exited = False
        self.proc.stdout.close()
        return exited


def one_run(argv: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    peer = Peer(argv, env, log)
    try:
        peer.send(INIT)
        init = peer.reply(1)
        init_s = time.perf_counter() - peer.t0
        if "result" not in init:
            raise SystemExit(f"initialize failed: {init}")
        peer.send(INITIALIZED)
        peer.send(TOOLS)
        tools = peer.reply(2)
        call_s = time.perf_counter() - peer.t0
        if not tools.get("result", {}).get("tools"):
            raise SystemExit(f"tools/list failed: {tools}")
        memory = memory_mib(peer.proc.pid)
    finally:
        exited = peer.close()
    return {"init_s": init_s, "tools_s": call_s, "rss_mib": memory["rss"],
            "peak_mib": memory["peak"], "exits_on_eof": exited}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs), "exits_on_eof": all(r["exits_on_eof"] for r in runs)}
    for key in ("init_s", "tools_s", "rss_mib", "peak_mib"):
        values = [r[key] for r in runs]
        out[key] = {"median": median(values), "min": min(values), "max": max(values)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if not MCP_REMOTE.exists() or shutil.which("node") is None:
        raise SystemExit(f"mcp-remote is not installed ({MCP_REMOTE}): run `npm ci` in tests/node")
    compileall.compile_dir(CHECKOUT / "velesmem", quiet=1)  # as pip does at install
    root = Path(tempfile.mkdtemp(prefix="velesmem-bench-attach-"))
    served = start_daemon(root / "daemon")
    try:
        port = int(served.base.rsplit(":", 1)[1])
        relay_env = daemon_env(root / "daemon", port, "hash")
        bridge_env = {k: v for k, v in relay_env.items()
                      if k not in ("NODE_EXTRA_CA_CERTS", "NODE_OPTIONS", "NODE_TLS_REJECT_UNAUTHORIZED")}
        bridge_env |= {"NODE_EXTRA_CA_CERTS": str(served.ca), "HOME": str(root / "bridge-home"),
                       "MCP_REMOTE_CONFIG_DIR": str(root / "bridge-home" / "mcp-auth"),
                       "npm_config_cache": str(root / "bridge-home" / "npm")}
        contenders = {
            "velesdb-memory (stdio relay)": ([sys.executable, "-m", "velesmem"], relay_env),
            "mcp-remote 0.15.1 (NODE_EXTRA_CA_CERTS)": (
                [str(MCP_REMOTE), served.url, "--transport", "http-only"], bridge_env),
        }
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, (argv, env) in contenders.items():
                results[name].append(one_run(argv, env, root / "clients.log"))
        load = load_average()
    finally:
        served.stop()
    figures = {name: summary(runs) for name, runs in results.items()}
    relay = figures["velesdb-memory (stdio relay)"]
    targets = {
        "init_s": {"target": TARGET_INIT_S, "measured": relay["init_s"]["median"],
                   "met": relay["init_s"]["median"] <= TARGET_INIT_S},
        "peak_mib": {"target": TARGET_RSS_MIB, "measured": relay["peak_mib"]["median"],
                     "met": relay["peak_mib"]["median"] <= TARGET_RSS_MIB},
    }
    rows = [[name, f"{f['init_s']['median']:.3f} ({f['init_s']['min']:.3f}–{f['init_s']['max']:.3f})",
             f"{f['tools_s']['median']:.3f}", f"{f['rss_mib']['median']:.1f}", f"{f['peak_mib']['median']:.1f}",
             "yes" if f["exits_on_eof"] else "no"] for name, f in figures.items()]
    print(f"{machine()}; load {load}; {args.runs} runs each, medians")
    print_table(["client", "exec → initialize reply, s (min–max)", "→ tools/list, s", "RSS MiB",
                 "peak RSS MiB", "exits on stdin EOF"], rows)
    for key, t in targets.items():
        print(f"target {key} ≤ {t['target']}: {t['measured']:.3f} → {'met' if t['met'] else 'MISSED'}")
    path = write_results("attach", {"runs": args.runs, "load": load, "clients": figures,
                                    "targets": targets})
    print(f"wrote {path}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

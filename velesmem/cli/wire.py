"""``velesdb-memory wire``: point every installed MCP client at the daemon (or ``--uninstall`` our
entries). The default entry is the stdio form (the absolute path of this velesdb-memory, which
attaches to the daemon and verifies its CA itself); ``--transport http`` writes the HTTPS URL and
prints the CA variable each client's runtime reads. Clients not on this machine are left alone.

Each config file is backed up as ``<file>.bak.<epoch>`` before a change, merged without touching
other keys, written atomically; an unparsable file is left byte-identical and reported (a warning,
not a failure: exit 1 only when a step that should have worked failed). With Claude Code it
also merges our session hooks into ~/.claude/settings.json (``--no-hooks`` to skip;
docs/agents.md). ``--token`` (from ``velesdb-memory token create``; ``-`` reads it from stdin)
puts ``Authorization: Bearer`` in every client's entry for a daemon that requires it
(docs/auth.md); without it an entry keeps the token it already has.
"""

from __future__ import annotations

import argparse
import re
import sys

from velesmem import limits
from velesmem.clients.catalog import CLIENTS, SERVER_NAME, STDIO, TRANSPORTS
from velesmem.service.options import add_daemon_options, add_summary_option, record


def _client_names(raw: str) -> list[str]:
    names = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown client {', '.join(unknown)}: one of {', '.join(CLIENTS)}")
    return names


_TOKEN = re.compile(r"[\x21-\x7e]+")  # visible ASCII: nothing that could end or split a header


def _token(raw: str) -> str:
    token = sys.stdin.readline().strip() if raw == "-" else raw.strip()
    if not token or len(token) > limits.MAX_BEARER_BYTES or not _TOKEN.fullmatch(token):
        raise argparse.ArgumentTypeError(
            "--token must be the token `velesdb-memory token create` printed (visible ASCII, no "
            f"spaces, at most {limits.MAX_BEARER_BYTES} characters), or - to read it from stdin")
    return token


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("wire", help="point Claude Code/Desktop, Codex, Cursor, Windsurf, "
                                   "Devin CLI, Cline, Zed, opencode, Gemini CLI, Qwen Code and Copilot "
                                   "CLI at the daemon", description=__doc__)
    add_daemon_options(parser, full=False)
    parser.add_argument("--url", default=None, help="daemon URL (default https://127.0.0.1:<port>/mcp)")
    parser.add_argument("--skip-client", action="append", type=_client_names, default=[],
                        metavar="NAME", help=f"leave a client alone (repeatable): {', '.join(CLIENTS)}")
    parser.add_argument("--transport", choices=TRANSPORTS, default=STDIO,
                        help="stdio (default): each client runs velesdb-memory, which attaches to the "
                        "daemon; http: each client connects to the HTTPS URL and must trust the CA")
    parser.add_argument("--uninstall", action="store_true", help="remove only our entry from each client")
    parser.add_argument("--token", type=_token, default=None, metavar="TOKEN",
                        help="bearer token each client sends (velesdb-memory token create; - "
                        "reads it from stdin); needed by a daemon beyond loopback")
    parser.add_argument("--no-hooks", dest="hooks", action="store_false",
                        help="leave Claude Code's session hooks (~/.claude/settings.json) alone")
    add_summary_option(parser)
    parser.set_defaults(handler=_wire)


def _wire(args: argparse.Namespace) -> int:
    from velesmem.clients import Host, WireRequest, wire_clients
    from velesmem.service.options import ca_cert_path, port_and_tls

    port, tls_dir = port_and_tls(args)
    request = WireRequest(
        url=args.url or f"https://127.0.0.1:{port}/mcp",
        ca_cert=ca_cert_path(tls_dir),
        skip=frozenset(name for group in args.skip_client for name in group),
        uninstall=args.uninstall,
        hooks=args.hooks,
        token=args.token or "",
        transport=args.transport,
    )
    if args.uninstall:
        print(f"removing our entry ({SERVER_NAME}, for {request.url}) from every client")
    elif request.stdio:
        print(f"wiring clients to run {request.command or 'velesdb-memory (not found)'} over stdio, "
              f"which attaches to the daemon at {request.url}"
              + (" with a bearer token" if args.token else ""))
    else:
        print(f"wiring clients to {request.url}" + (" with a bearer token" if args.token else ""))
    outcomes = wire_clients(request, Host.current())
    for outcome in outcomes:
        print("  " + outcome.line())
        action = "" if outcome.action == outcome.summary_status() else outcome.action
        detail = " ".join(filter(None, [action, outcome.path or "", outcome.detail,
                                        f"backup {outcome.backup}" if outcome.backup else ""]))
        record(args, outcome.summary_status(), f"client {outcome.client}", detail)
    return 1 if any(o.failed for o in outcomes) else 0

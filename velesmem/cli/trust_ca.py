"""``velesdb-memory trust-ca``: trust the daemon's local CA for the current user, then verify it
with a strict TLS request. Never touched by an uninstall."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from velesmem.service.options import add_daemon_options, add_summary_option, record


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("trust-ca", help="trust the daemon's local CA (user store, no admin)",
                                   description=__doc__)
    add_daemon_options(parser, full=False)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for the OS (e.g. the macOS keychain prompt)")
    add_summary_option(parser)
    parser.set_defaults(handler=_trust)


def _trust(args: argparse.Namespace) -> int:
    from velesmem.clients.host import Host
    from velesmem.service.health import check_health
    from velesmem.service.options import ca_cert_path, port_and_tls
    from velesmem.service.trust import os_store_trusts, system_store_command, trust_ca

    host = Host.current()
    port, tls_dir = port_and_tls(args)
    ca = ca_cert_path(tls_dir)
    if not Path(ca).is_file():
        print(f"{ca} does not exist: start the daemon once (it creates its CA), then re-run", file=sys.stderr)
        record(args, "failed", "CA trust", f"{ca} does not exist yet")
        return 1
    result = trust_ca(host, ca, args.timeout)
    if result.action in ("added", "already"):
        print(f"CA {'trusted' if result.action == 'added' else 'already trusted'} in the {result.store}"
              f"{f' ({result.detail})' if result.detail else ''}")
        record(args, "done" if result.action == "added" else "skipped",
               f"CA trust in the {result.store}", "" if result.action == "added" else "already trusted")
    else:
        print(f"CA not trusted in the {result.store}: {result.detail}\n  run by hand: {result.command}",
              file=sys.stderr)
        record(args, "skipped" if result.action == "manual" else "failed",
               f"CA trust in the {result.store}", f"{result.detail}; run by hand: {result.command}")
    status = check_health("127.0.0.1", port, ca)
    if status.ok:
        print(f"verified: strict TLS to https://127.0.0.1:{port}/health with {ca}")
    else:
        print(f"could not verify with a strict TLS request ({status.kind}: {status.detail})", file=sys.stderr)
    if status.ok and not host.is_windows and not host.is_macos and not os_store_trusts("127.0.0.1", port):
        print("note: curl and Python without --cacert use the system OpenSSL store, which needs root; "
              f"optional: {system_store_command(ca)}")
    return 0 if result.action in ("added", "already", "manual") else 1

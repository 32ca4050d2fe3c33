"""``velesdb-memory trust-ca``: trust the daemon's local CA for the current user, then verify it
with a strict TLS request. ``--system`` adds it to the OS store instead (root on Linux; what curl,
Python, Bun and Codex read), ``--system --remove`` takes it out cleanly. Never touched by an
uninstall."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from velesmem.service.options import add_daemon_options, add_summary_option, record


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("trust-ca", help="trust the daemon's local CA (user store, no admin)",
                                   description=__doc__)
    add_daemon_options(parser, full=False)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for the OS (e.g. the macOS keychain prompt)")
    parser.add_argument("--system", action="store_true",
                        help="the OS trust store instead: update-ca-certificates or p11-kit trust "
                        "on Linux (needs root), the System keychain on macOS, CurrentUser\\Root "
                        "on Windows")
    parser.add_argument("--remove", action="store_true",
                        help="with --system: take the CA out of the OS store")
    add_summary_option(parser)
    parser.set_defaults(handler=_trust)


def _system(args: argparse.Namespace) -> int:
    """``--system [--remove]``: change the OS store, verify with the OS's own roots, then say
    which runtimes still need a variable."""
    from velesmem.clients.host import Host
    from velesmem.service import system_trust
    from velesmem.service.options import ca_cert_path, port_and_tls
    from velesmem.service.trust import os_store_trusts, runtime_hints

    host = Host.current()
    port, tls_dir = port_and_tls(args)
    ca = ca_cert_path(tls_dir)
    if not args.remove and not Path(ca).is_file():
        print(f"{ca} does not exist: start the daemon once (it creates its CA), then re-run", file=sys.stderr)
        record(args, "failed", "CA trust in the system store", f"{ca} does not exist yet")
        return 1
    timeout = max(args.timeout, system_trust.DEFAULT_TIMEOUT_S)
    change = system_trust.remove if args.remove else system_trust.add
    result = change(host, ca, timeout)
    step = f"CA {'removal from' if args.remove else 'trust in'} the {result.store}"
    if result.action == "failed":
        print(f"{step} failed: {result.detail}\n  run by hand: {result.command}", file=sys.stderr)
        record(args, "failed", step, f"{result.detail}; run by hand: {result.command}")
        return 1
    said = {"added": "CA trusted in", "already": "CA already trusted in",
            "removed": "CA removed from", "absent": "CA was not in"}[result.action]
    print(f"{said} the {result.store}{f' ({result.detail})' if result.detail else ''}")
    record(args, "done" if result.action in ("added", "removed") else "skipped", step,
           "" if result.action in ("added", "removed") else result.action)
    if args.remove:
        return 0
    if os_store_trusts("127.0.0.1", port):
        print(f"verified: https://127.0.0.1:{port}/health with the OS's own roots (no CA file)")
    else:
        print(f"not verified with the OS's own roots: no daemon answered on port {port}, or this "
              "Python reads another store", file=sys.stderr)
    hints = runtime_hints(ca, system_trusted=True)
    if hints:
        print("runtimes that do not read the OS store still need a variable:\n  " + "\n  ".join(hints))
    return 0


def _trust(args: argparse.Namespace) -> int:
    from velesmem.clients.host import Host
    from velesmem.service.health import check_health
    from velesmem.service.options import ca_cert_path, port_and_tls
    from velesmem.service.trust import os_store_trusts, trust_ca

    if args.system:
        return _system(args)
    if args.remove:
        print("--remove takes the CA out of the OS store: use it with --system", file=sys.stderr)
        return 2
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
              "optional: sudo velesdb-memory trust-ca --system")
    return 0 if result.action in ("added", "already", "manual") else 1

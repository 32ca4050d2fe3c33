"""``velesdb-memory doctor``: one screen — does the daemon answer, with which embedder and corpus,
is its CA trusted by Python and Node, which clients are wired to what — and the fix for each problem."""

from __future__ import annotations

import argparse

from velesmem.service.options import add_daemon_options


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("doctor", help="check the daemon, its CA trust and client wiring",
                                   description=__doc__)
    add_daemon_options(parser, full=False)
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from velesmem.cli.open_ import dashboard_url
    from velesmem.clients.host import Host
    from velesmem.config import Settings
    from velesmem.service.diagnose import FAIL, diagnose
    from velesmem.service.lifecycle import record_file
    from velesmem.service.options import port_and_tls

    host = Host.current()
    settings = Settings.from_env()
    port, tls_dir = port_and_tls(args, settings)
    recorded = record_file(host)
    source = f"installer record {recorded}" if recorded.is_file() else "no installer record"
    print(f"velesdb-memory doctor — https://127.0.0.1:{port}/mcp, dashboard {dashboard_url(port)}, "
          f"TLS dir {tls_dir} ({source})")
    checks = diagnose(host, port, tls_dir, str(settings.path))
    for check in checks:
        print(check.line())
    problems = sum(1 for c in checks if c.status == FAIL)
    print(f"{problems} problem{'s' if problems != 1 else ''} found" if problems else "no problems found")
    return 1 if problems else 0

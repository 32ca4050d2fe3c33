"""``velesdb-memory open`` (alias ``dashboard``): open the daemon's dashboard,
``https://127.0.0.1:<port>/``, in the default browser and print its URL; ``--print`` only prints
it (docs/dashboard.md). The port is the daemon's: ``--port``, else the environment, else the
installer record, else 18090."""

from __future__ import annotations

import argparse

from velesmem.service.options import add_daemon_options, add_summary_option, record


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("open", aliases=["dashboard"],
                                   help="open the dashboard in the default browser",
                                   description=__doc__)
    add_daemon_options(parser, full=False)
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="only print the dashboard's URL")
    add_summary_option(parser)
    parser.set_defaults(handler=_open)


def dashboard_url(port: int) -> str:
    """The dashboard's URL on this machine for a daemon on ``port``."""
    return f"https://127.0.0.1:{port}/"


def _open(args: argparse.Namespace) -> int:
    from velesmem.service.options import port_and_tls

    port, _ = port_and_tls(args)
    url = dashboard_url(port)
    print(url)
    record(args, "done", "dashboard", url)
    if args.print_only:
        return 0
    import webbrowser

    if not webbrowser.open(url):
        print("no browser could be started here: open the URL above in one")
    return 0

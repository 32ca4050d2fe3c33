"""``velesdb-memory demo``: see what why finds that recall cannot, offline, in a second or two.

A decision, its PR and the ticket it fixed go into a temporary store twice — once linked with
relate, once linked only by the identifiers they share — and the same question goes to recall
and to why. Colour on a terminal (unless NO_COLOR is set), plain text otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo", help="offline: what recall returns next to what why returns", description=__doc__)
    parser.set_defaults(handler=run)


def use_color(stream: object, environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    isatty = getattr(stream, "isatty", None)
    return (callable(isatty) and bool(isatty()) and not environ.get("NO_COLOR")
            and environ.get("TERM") != "dumb")


def run(args: argparse.Namespace) -> int:
    from velesmem.agents import demo

    print(demo.render(demo.run(), color=use_color(sys.stdout)))
    return 0

"""``velesdb-memory`` / ``velesmem``: serve MCP (the default) or run one subcommand.

Each subcommand lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``handler`` (a function taking
the parsed namespace and returning an exit code). Modules are discovered, so adding a command is
adding a module. Heavy imports stay inside handlers so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from velesmem import __version__, limits
from velesmem.config import settings_help
from velesmem.errors import VelesmemError

PROG = "velesdb-memory"


def build_parser() -> argparse.ArgumentParser:
    """The full parser: serve flags at the top level, one subparser per command module."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="velesmem: local-first, explainable memory for AI agents, served over MCP. "
        "Without a command it serves MCP over stdio (or HTTPS with --http).",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(subparsers)
    return parser


def _command_modules() -> list:
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            modules.append(module)
    return modules


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of both console scripts."""
    # Before anything loads numpy (heavy imports wait for the handlers); a value set by the
    # user still wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(limits.BLAS_THREADS))
    parser = build_parser()
    serve = _serve_module()
    if serve is not None:
        serve.add_serve_arguments(parser)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        if serve is None:
            parser.print_help()
            return 2
        handler = serve.run_serve
    try:
        return int(handler(args) or 0)
    except VelesmemError as exc:
        print(f"{PROG}: error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _serve_module():  # the default action when no command is given
    try:
        return importlib.import_module(f"{__name__}._serve")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}._serve":
            raise
        return None


if __name__ == "__main__":
    sys.exit(main())

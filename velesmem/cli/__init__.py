"""``velesdb-memory`` / ``velesmem``: serve MCP (the default) or run one subcommand.

Each subcommand lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``handler`` (a function taking
the parsed namespace and returning an exit code). Modules are discovered, so adding a command is
adding a module. Heavy imports stay inside handlers so ``--help`` is instant, and serving (no
command, only serve flags) imports no command module at all: the daemon starts without the
client catalog, installers and docs code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from velesmem import __version__, limits
from velesmem.arenas import cap_arenas
from velesmem.config import settings_help
from velesmem.errors import VelesmemError

PROG = "velesdb-memory"


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """The full parser: serve flags at the top level, one subparser per command module (none
    without ``commands``: enough to parse a command line that names no command)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="velesmem: local-first, explainable memory for AI agents, served over MCP. "
        "Without a command it serves MCP over stdio (or HTTPS with --http).",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules() if commands else ():
        module.register(subparsers)
    return parser


def _names_no_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> bool:
    """Whether ``argv`` is only ``parser``'s own flags, spelled out in full (``--help`` aside):
    then it parses the same without the command subparsers."""
    options = parser._option_string_actions  # argparse has no public lookup by flag
    rest = iter(argv)
    for token in rest:
        flag, eq, _ = token.partition("=")
        action = options.get(flag)
        if action is None or action.nargs not in (None, 0) or isinstance(
                action, argparse._HelpAction):
            return False  # a command, a prefix or unknown flag, or --help (which lists commands)
        if action.nargs == 0 and eq:
            return False  # a value given to a flag: let the full parser say so
        if action.nargs is None and not eq and next(rest, None) is None:
            return False  # its value is missing: let the full parser say so
    return True


def _command_modules() -> list[ModuleType]:
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            modules.append(module)
    return modules


def main(argv: Sequence[str] | None = None, *, attach: bool = True) -> int:
    """The CLI (the console scripts enter through ``velesmem.launcher``). With no arguments it
    first attaches to a running daemon, as the launcher does, unless told the launcher already
    looked (``attach=False``): a console script generated before the launcher existed still
    takes the light path."""
    if attach and not (sys.argv[1:] if argv is None else argv):
        from velesmem.launcher import attach as attach_stdio

        code = attach_stdio()
        if code is not None:
            return code
    # Before anything loads numpy (heavy imports wait for the handlers); a value set by the
    # user still wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(limits.BLAS_THREADS))
    cap_arenas()  # before any thread: glibc fixes its arena limit at the second arena
    argv = sys.argv[1:] if argv is None else list(argv)
    serve = _serve_module()
    parser = _parser(serve, commands=serve is None)
    if serve is not None and not _names_no_command(parser, argv):
        parser = _parser(serve, commands=True)
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


def _parser(serve: ModuleType | None, commands: bool) -> argparse.ArgumentParser:
    parser = build_parser(commands)
    if serve is not None:
        serve.add_serve_arguments(parser)
    return parser


def _serve_module() -> ModuleType | None:  # the default action when no command is given
    try:
        return importlib.import_module(f"{__name__}._serve")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}._serve":
            raise
        return None


if __name__ == "__main__":
    sys.exit(main())

"""``velesdb-memory import memories.jsonl``: restore an export into the configured store.

The inverse of ``export``, all or nothing. First the whole file is checked without the store
(each line's length, JSON, ids against the hash of their content, caps, reserved keys, relation
labels; a repeated line counts once): the first bad line is named and nothing is written. Then
the store says what it already holds exactly so (left alone: a second run changes nothing) and
whether the edges' ends the file does not hold are stored facts; user facts are embedded again
by the store's embedder; and everything is written in ONE transaction: every fact with its
metadata as exported (the ``_veles_author`` a bearer token recorded included), learned
confidence and counts, creation and update times and expiry, internal scaffolding (in
``--include-internal`` exports) and every edge. The autograph is off meanwhile: the export's
own hubs and edges come back, nothing more. Facts already expired are skipped, with their
edges. It works for any backend pair: a SQLite backup restored, or a personal store moved to a
team's PostgreSQL database (docs/team.md).

With ``--from SOURCE`` it reads another memory server's data instead (server-memory,
mcp-memory-service, basic-memory, mem0, claude-code; docs/import.md): every item of PATH is
read and checked first, then what the store does not hold yet is written in one transaction
(a second run adds nothing), and a summary says what came across and what was skipped, why.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import IO

from velesmem import limits

PROGRESS_EVERY_S = 0.5


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from velesmem.importers import NATIVE, SOURCES

    parser = subparsers.add_parser(
        "import", help="restore an export (JSON Lines), or import another memory server's data "
                       "(--from), into the configured store, all or nothing",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, metavar="PATH",
                        help="a file written by `velesdb-memory export`, or with --from the "
                             "source's file or folder")
    parser.add_argument("--from", dest="source", default=NATIVE, choices=[NATIVE, *SOURCES],
                        metavar="SOURCE",
                        help=f"what PATH holds: {NATIVE} (default: a velesmem export) or "
                             f"{', '.join(SOURCES)} (docs/import.md)")
    parser.add_argument("--path", type=Path, default=None,
                        help="store directory for the sqlite backend (default "
                             "VELESDB_MEMORY_PATH)")
    parser.add_argument("--max-line-bytes", type=int, default=limits.MAX_IMPORT_LINE_BYTES,
                        metavar="N",
                        help="refuse a line longer than N bytes while reading, before parsing it "
                             f"(default {limits.MAX_IMPORT_LINE_BYTES:,})")
    parser.set_defaults(handler=run)


class Progress:
    """Progress lines on stderr, at most one every PROGRESS_EVERY_S per phase."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._last = (0.0, "")

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if phase == self._last[1] and now - self._last[0] < PROGRESS_EVERY_S:
            return
        self._last = (now, phase)
        shown = f"{done:,}" if total is None else f"{done:,}/{total:,}"
        noun = "items" if total is None else "facts"
        self.out.write(f"import: {shown} {noun} {phase}\n")
        self.out.flush()


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.errors import Internal, InvalidInput, NotFound, VelesmemError
    from velesmem.memory.import_file import check_file
    from velesmem.memory.restore import restore
    from velesmem.runtime import Runtime


    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.max_line_bytes < 1:
        raise InvalidInput("--max-line-bytes must be a positive number of bytes")
    settings = Settings.from_env()
    if args.path is not None:
        settings = settings.with_overrides(path=args.path.expanduser())
    if args.source != "native":
        from velesmem.cli.import_source import run_source

        return run_source(args.source, args.file, settings, Progress(sys.stderr))
    checked = check_file(args.file, max_line_bytes=args.max_line_bytes)
    say(f"import: {args.file} checked: {len(checked.facts):,} facts and "
        f"{len(checked.edges):,} edges")
    # Restore the export as it was: no autograph deriving more scaffolding meanwhile (an
    # --include-internal export carries the hubs and edges it built).
    runtime = Runtime.open(settings.with_overrides(autograph="off"))
    try:
        runtime.wait_ready_sync()
        memory = runtime.memory
        try:
            report = restore(runtime.store, memory.embedder, checked, memory.now(),
                             Progress(sys.stderr), runtime.executor)
        except VelesmemError as exc:
            if "nothing was imported" in exc.message:
                raise
            worded = {NotFound.category: NotFound, InvalidInput.category: InvalidInput}.get(
                exc.category, Internal)
            raise worded(f"{exc.message}; nothing was imported") from None
        location = runtime.store.location
    finally:
        runtime.close()
    say(f"imported {report.facts} facts and {report.edges} edges into {location} "
        f"({report.unchanged} already there, {report.expired} expired skipped, "
        f"{report.repeated} repeated lines counted once)")
    return 0

"""``velesdb-memory export --output F [--include-internal]``: a JSON Lines backup of the store.

Reads the store only (no embedder), so it also works on a store whose embedder no longer matches,
and on a store a running daemon serves (from a consistent read-only snapshot).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export", help="write every fact and edge of the store to a JSON Lines file",
        description=__doc__)
    parser.add_argument("--output", "-o", required=True, type=Path,
                        help="file to write (JSON Lines: fact lines, then edge lines)")
    parser.add_argument("--include-internal", action="store_true",
                        help="also write graph scaffolding and reserved _veles_* keys, verbatim")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import time

    from velesmem.config import Settings
    from velesmem.memory.export import export_store
    from velesmem.runtime import offline_store

    settings = Settings.from_env()
    now = time.time()
    with offline_store(settings, now=now) as store:
        facts, edges = export_store(store, args.output, include_internal=args.include_internal,
                                    now=now)
        location = store.location
    print(f"exported {facts} facts and {edges} edges from {location} to {args.output}",
          file=sys.stderr)
    return 0

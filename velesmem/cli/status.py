"""``velesdb-memory status``: open the store and print memory_status as JSON."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="print the store's memory_status (embedder, provenance, counts) as JSON",
        description=__doc__)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.memory import MemoryService

    settings = Settings.from_env()
    with MemoryService.open(settings=settings) as mem:
        out = {"path": str(settings.path), **mem.memory_status().to_dict()}
    print(json.dumps(out, indent=2))
    return 0

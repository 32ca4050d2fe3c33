"""``velesdb-memory verify [--path DIR] [--repair]``: check the store's invariants offline.

Checks that every live fact has a vector in the serving embedding space and is in the FAISS
index, that no edge points at a missing fact, that the full-text and metadata indexes match the
facts, and the schema version; prints what is wrong and exits 1 when anything is. A store a
daemon is serving is checked from a read-only snapshot (or verify a copy of its directory);
``--repair`` rebuilds what is derived (indexes, vectors re-embedded by the store's embedder) and
needs the store to itself (stop the daemon first).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from velesmem.config import Settings
    from velesmem.store import Store


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify", help="check the store's invariants (vectors, index, edges, FTS, schema)",
        description=__doc__)
    parser.add_argument("--path", type=Path, default=None,
                        help="store directory to check (default VELESDB_MEMORY_PATH)")
    parser.add_argument("--repair", action="store_true",
                        help="rebuild what is derived (the store must not be in use)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.runtime import offline_store

    settings = Settings.from_env()
    if args.path is not None:
        settings = settings.with_overrides(path=args.path.expanduser())

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with offline_store(settings, writable=args.repair) as store:
        location = store.location  # a directory, or a database URL without its password
        problems = store.verify()
        for p in problems:
            print(f"[{'derived' if p.derived else 'PROBLEM'}] {p.check}: {p.detail}")
        if args.repair and problems:
            left = store.repair(say, _embedder_for(store, settings))
            fixed = len(problems) - len(left)
            print(f"repaired {fixed} problem{'s' if fixed != 1 else ''}")
            for p in left:
                print(f"[left] {p.check}: {p.detail}")
            problems = left
    if not problems:
        print(f"store {location}: every check passed")
        return 0
    if not args.repair and any(p.derived for p in problems):
        print("derived problems can be fixed with `velesdb-memory verify --repair` (stop the "
              "daemon first)")
    return 1


def _embedder_for(store: Store,
                  settings: Settings) -> Callable[[list[str]], np.ndarray] | None:
    """The serving space's own embedder (from its recorded identity, whatever
    VELESDB_MEMORY_EMBEDDER says: after a migration they differ), to re-embed missing vectors;
    None when it cannot run here."""
    from velesmem.errors import VelesmemError
    from velesmem.runtime import embedder_of

    space = store.serving_space()
    if space is None:
        return None
    try:
        embedder = embedder_of(settings, space.identity)
        if embedder is None:
            print(f"velesdb-memory: the serving space was filled by {space.identity.model!r}, "
                  "which this velesmem cannot run: missing vectors are left as they are",
                  file=sys.stderr)
            return None
        warm = getattr(embedder, "warm", None)
        if callable(warm):
            warm()
        if (embedder.model, embedder.dimension) != (space.identity.model,
                                                    space.identity.dimension):
            return None
    except VelesmemError as exc:
        print(f"velesdb-memory: cannot load the serving space's embedder "
              f"{space.identity.model!r} ({exc.message}): missing vectors are left as they are",
              file=sys.stderr)
        return None
    return lambda texts: embedder.embed(texts)

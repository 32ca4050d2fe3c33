"""``velesdb-memory prepare-model [--dir DIR]``: derive the local model's int8 graph now.

The default local embedder serves an int8 graph derived from the installed model file (seconds of
CPU and a few hundred MiB once). The installers run this right after ``pip install`` so no daemon
start pays for it: the graph goes beside the installation (``share/velesmem/models`` under the
virtual environment), found by every user and every HOME; when that directory cannot be written,
into the user's cache. Re-running finds it and does nothing. Without the ``embed`` extra there is
nothing to prepare (exit 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "prepare-model", help="derive the local model's int8 graph at install time (idempotent)",
        description=__doc__)
    parser.add_argument("--dir", type=Path, default=None,
                        help="directory to write it into (default: beside the installation, "
                        "else the user cache)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from velesmem.embed.local import INSTALL_HINT, missing_modules, prepare_model
    from velesmem.embed.quantize import cache_dir, install_dir
    from velesmem.errors import Internal

    missing = missing_modules()
    if missing:
        print(f"prepare-model: skipped, the local embedder is not installed ({', '.join(missing)} "
              f"missing; {INSTALL_HINT})", file=sys.stderr)
        return 0
    if args.dir is not None:
        path = prepare_model(args.dir.expanduser())
    else:
        try:
            path = prepare_model(install_dir())
        except Internal as exc:
            print(f"prepare-model: {exc.message}; using the user cache instead", file=sys.stderr)
            path = prepare_model(cache_dir())
    print(path)
    return 0

"""The ``velesdb-memory`` / ``velesmem`` console scripts.

With no arguments (how every agent starts its stdio MCP server) it first asks, with the standard
library only, whether a daemon serving this store runs, and if so relays stdio to it: no engine,
model, numpy, FAISS, pydantic, httpx or MCP SDK is imported, so attaching is fast and small.
Otherwise — no daemon, or any argument — it is the full CLI (``velesmem.cli``), which opens the
store only then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of both console scripts and ``python -m velesmem``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        code = attach()
        if code is not None:
            return code
    from velesmem.cli import main as cli_main

    return cli_main(args, attach=False)


def attach() -> int | None:
    """Relay stdio to the daemon serving this store, if one runs, and return the exit code;
    None when there is none (the caller serves instead)."""
    parent = os.getppid()  # read first: the parent may die while we start
    from velesmem.daemon.probe import find_daemon

    found = find_daemon()
    if found is None:
        return None
    from velesmem.daemon.relay import run_relay
    from velesmem.daemon.stdio import start_orphan_watchdog

    start_orphan_watchdog(lambda: os._exit(0), parent)
    return run_relay(found, locate=find_daemon)


if __name__ == "__main__":
    sys.exit(main())

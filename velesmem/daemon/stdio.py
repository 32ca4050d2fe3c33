"""Serve MCP over stdio: open the store, or attach to the daemon that holds it; exit when the
parent process dies (an orphaned stdio server would hold the store lock forever).

Start-up runs with the cyclic garbage collector off, as the HTTPS daemon's does, and the Runtime
starts warming (the model, the index) only once the MCP server is built: both would otherwise
slow the first reply. The heap built by start-up is frozen when the collector comes back on."""

from __future__ import annotations

import gc
import logging

import os
import threading
from collections.abc import Callable

from velesmem.config import Settings
from velesmem.errors import StoreLocked

log = logging.getLogger("velesmem.daemon")

WATCHDOG_INTERVAL_S = 1.0


def start_orphan_watchdog(
    on_orphaned: Callable[[], None], parent: int, interval_s: float = WATCHDOG_INTERVAL_S
) -> None:
    """Call ``on_orphaned`` once ``parent`` (our parent pid, read at startup) is gone and we have
    been re-parented, from a daemon thread."""
    if parent <= 1:
        return  # started by init/launchd directly: no parent to outlive

    def watch() -> None:
        stop = threading.Event()
        while not stop.wait(interval_s):
            if os.getppid() != parent:
                on_orphaned()
                return

    threading.Thread(target=watch, name="velesmem-orphan-watchdog", daemon=True).start()


def serve_stdio(settings: Settings) -> int:
    """Serve MCP on stdin/stdout until stdin closes or the parent dies."""
    parent = os.getppid()  # read first: the parent may die while we are still starting
    gc.disable()  # start-up imports build a large heap: collected again and again otherwise
    try:
        return _serve_stdio(settings, parent)
    finally:
        gc.enable()


def _serve_stdio(settings: Settings, parent: int) -> int:
    from velesmem.runtime import Runtime, configure_logging

    try:
        configure_logging()
        # The lock first (a second owner fails fast); the Runtime starts warming once the MCP
        # server is built: loading the model beside those imports would slow the first reply.
        runtime = Runtime.open(settings, start=False)
    except StoreLocked:
        # the launcher found no daemon a moment ago; one may have taken the store since
        from velesmem.daemon.probe import find_daemon
        from velesmem.daemon.relay import run_relay

        found = find_daemon(settings, explain=True)
        if found is None:
            raise
        gc.enable()  # a relay for the rest of the process's life
        start_orphan_watchdog(lambda: os._exit(0), parent)
        return run_relay(found, locate=lambda: find_daemon(settings))

    def orphaned() -> None:
        log.info("parent process exited; closing the store")
        try:
            runtime.close()
        finally:
            os._exit(0)

    start_orphan_watchdog(orphaned, parent)
    try:
        from velesmem.mcp.app import AppContext
        from velesmem.mcp.server import build_server, serve_stdio as serve_mcp_stdio

        server = build_server(AppContext(runtime))
        gc.freeze()  # what start-up built stays; the collector walks only what serving adds
        gc.enable()
        runtime.start(defer_warm=True)  # a slow model loads once the first call has run
        serve_mcp_stdio(server)
    finally:
        runtime.close()
    return 0

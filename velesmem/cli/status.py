"""``velesdb-memory status``: the store's memory_status as JSON.

The store is the one the settings name (environment, else the installer record, else the default).
When a running daemon holds it, the daemon is asked over MCP instead of failing on the lock;
otherwise a read-only view of the store answers: no thread, no model load, no TTL sweep, nothing
written. A store that does not exist yet is reported as such (``"exists": false``), never created.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from velesmem.config import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status", help="print the store's memory_status (embedder, provenance, counts) as JSON",
        description=__doc__)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.runtime import Runtime

    settings = Settings.from_env()
    if not store_exists(settings):
        print(json.dumps({"path": str(settings.path), "exists": False,
                          "message": f"no store at {settings.path} yet (nothing was created): "
                                     "the daemon or the first remember creates it"}, indent=2))
        return 0
    out = _from_daemon(settings) if store_served(settings) else None
    if out is None:
        with Runtime.open_view(settings) as view:
            out = {"path": str(settings.path), **view.memory.memory_status().to_dict()}
    print(json.dumps(out, indent=2))
    return 0


def store_exists(settings: Settings) -> bool:
    """Whether the store the settings name exists, looked at without creating anything: the
    SQLite database file, or the store's tables in the PostgreSQL database."""
    if settings.backend == "postgres":
        from velesmem.store.postgres.connection import connect

        with connect(settings.database_url) as conn:
            row = conn.execute("SELECT to_regclass('facts') IS NOT NULL").fetchone()
        return bool(row and row[0])
    from velesmem.store.sqlite.backend import DB_FILE

    return (settings.path / DB_FILE).is_file()


def store_served(settings: Settings) -> bool:
    """Whether a process may be serving the store: a SQLite store's lock is held (looked at
    without taking it); a PostgreSQL store is always asked about, as many daemons share it."""
    if settings.backend != "sqlite":
        return True
    from velesmem.store.sqlite.lock import held

    return held(settings.path)


def _from_daemon(settings: Settings) -> dict[str, Any] | None:
    """memory_status from the daemon serving this store, or None when none answers for it."""
    from pathlib import Path

    from velesmem.service.health import check_health
    from velesmem.service.mcpprobe import McpProbeError, call_tool

    ca = str(Path(settings.tls_dir) / "ca-cert.pem")
    health = check_health("127.0.0.1", settings.http_port, ca)
    if not health.ok or Path(health.store) != settings.path.resolve():
        return None
    url = f"https://127.0.0.1:{settings.http_port}/mcp"
    try:
        status = call_tool(url, ca, "memory_status", token=settings.auth_token)
    except (McpProbeError, OSError, ValueError):
        return None
    return {"path": str(settings.path), "served_by": url, **status}

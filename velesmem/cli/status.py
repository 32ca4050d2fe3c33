"""``velesdb-memory status``: the store's memory_status as JSON.

The store is the one the settings name (environment, else the installer record, else the default).
When a running daemon holds it, the daemon is asked over MCP instead of failing on the lock.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from velesmem.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="print the store's memory_status (embedder, provenance, counts) as JSON",
        description=__doc__)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.errors import StoreLocked
    from velesmem.memory import MemoryService

    settings = Settings.from_env()
    try:
        with MemoryService.open(settings=settings) as mem:
            out = {"path": str(settings.path), **mem.memory_status().to_dict()}
    except StoreLocked:
        out = _from_daemon(settings)
        if out is None:
            raise
    print(json.dumps(out, indent=2))
    return 0


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

"""The default action of ``velesdb-memory``: serve MCP over stdio, or over HTTPS with ``--http``.

Flags override the environment (``VELESDB_MEMORY_HTTP*``); the transports themselves live in
``velesmem.daemon`` (imported lazily so ``--help`` stays instant).
"""

from __future__ import annotations

import argparse

from velesmem.config import ENV_PREFIX, Settings, port_number


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the top-level serve flags (each has an environment equivalent)."""
    group = parser.add_argument_group("serving (without a command)")
    group.add_argument(
        "--http", action="store_true", default=None,
        help=f"serve streamable HTTPS on /mcp (and GET /health) instead of stdio [{ENV_PREFIX}HTTP=1]",
    )
    group.add_argument(
        "--http-port", type=port_number, metavar="PORT", default=None,
        help=f"override just the port of {ENV_PREFIX}HTTP_BIND (default 127.0.0.1:18090); 0 binds a "
        "free port, printed as \"listening on https://127.0.0.1:PORT/mcp\" and reported by /health",
    )
    group.add_argument(
        "--http-insecure", action="store_true", default=None,
        help=f"serve plain HTTP instead of HTTPS, with a loud warning; debugging only "
        f"[{ENV_PREFIX}HTTP_INSECURE=1]",
    )


def settings_from_args(args: argparse.Namespace, settings: Settings | None = None) -> Settings:
    """The environment's settings with the serve flags applied on top."""
    settings = settings or Settings.from_env()
    changes: dict[str, object] = {}
    if getattr(args, "http", None):
        changes["http"] = True
    if getattr(args, "http_insecure", None):
        changes["http_insecure"] = True
    port = getattr(args, "http_port", None)
    if port is not None:
        host, _, _ = settings.http_bind.rpartition(":")
        changes["http_bind"] = f"{host or '127.0.0.1'}:{port}"
    return settings.with_overrides(**changes) if changes else settings


def run_serve(args: argparse.Namespace) -> int:
    """Serve MCP: stdio by default, HTTPS with --http; returns the exit code."""
    settings = settings_from_args(args)
    if settings.http:
        from velesmem.daemon.runner import serve_http

        return serve_http(settings)
    from velesmem.daemon.stdio import serve_stdio

    return serve_stdio(settings)

"""Tool modules: each defines ``register(mcp: ToolRegistry, app: AppContext) -> None``.

``velesmem.mcp.server.build_server`` imports every module here (names starting with ``_`` are
skipped) and calls its ``register``, in the order of an optional module-level ``ORDER`` (default
100), then name. Declare parameters with ``velesmem.mcp.wire`` types, return
the ``to_dict()`` of a service result, and let service errors propagate: the error middleware maps
them to JSON-RPC codes.
"""

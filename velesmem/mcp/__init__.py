"""The MCP layer: FastMCP tools as thin calls into the services, wire types, error mapping.

``build_server(AppContext(runtime))`` gives the FastMCP server both transports serve.
Tools live one module per family in ``velesmem/mcp/tools/``; each defines
``register(mcp, app)`` and is discovered, so adding tools is adding a module.
"""

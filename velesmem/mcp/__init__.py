"""The MCP layer: tools as thin calls into the services, wire types, error mapping.

``build_server(AppContext(runtime))`` gives the MCP SDK server both transports serve.
Tools live one module per family in ``velesmem/mcp/tools/``; each defines
``register(tools, app)`` and is discovered, so adding tools is adding a module.
"""

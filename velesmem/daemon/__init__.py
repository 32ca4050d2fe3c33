"""The HTTPS daemon and the stdio transport: TLS, guards, the ASGI app, runners, attach."""

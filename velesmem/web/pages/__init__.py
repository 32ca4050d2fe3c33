"""The dashboard's pages: one module each, defining ``PAGE`` (``velesmem.web.registry``)."""

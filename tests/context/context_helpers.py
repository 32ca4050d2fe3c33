"""Helpers for the compiler tests: request builders and a PNG/JPEG maker (the clock the tests
move by hand is tests.support's)."""

from __future__ import annotations

import base64
import struct
from typing import Any

from tests.support import Clock as Clock  # re-exported: the compiler tests import it from here
from velesmem.context.media import png_bytes
from velesmem.context.service import ContextService


def request(fragments: list[Any], budget: int = 1000, query: str = "canary deploy", **extra: Any) -> dict[str, Any]:
    """A compile request; plain strings become {"content": s}."""
    frags = [{"content": f} if isinstance(f, str) else f for f in fragments]
    return {"query": query, "token_budget": budget, "fragments": frags, **extra}


def compile_(fragments: list[Any], budget: int = 1000, query: str = "canary deploy", **extra: Any) -> dict[str, Any]:
    """Compile with no store and no ingest roots."""
    return ContextService().compile_context(request(fragments, budget, query, **extra))


def decision(result: dict[str, Any], index: int) -> dict[str, Any]:
    return next(d for d in result["decisions"] if d["fragment_index"] == index)


def png_b64(width: int, height: int) -> str:
    return base64.b64encode(png_bytes(width, height)).decode()


def jpeg_bytes(width: int, height: int) -> bytes:
    """A JPEG header carrying its size in an SOF0 segment (enough for dimension sniffing)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def media_fragment(b64: str, caption: str = "", **extra: Any) -> dict[str, Any]:
    return {"content": caption, "media": {"mime": "image/png", "bytes_b64": b64}, **extra}

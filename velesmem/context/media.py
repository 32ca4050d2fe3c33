"""Inline images: strict base64 decoding, PNG/JPEG header dimensions, and their token cost."""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass

from velesmem.errors import InvalidInput
from velesmem.limits import MAX_MEDIA_B64_BYTES

PIXELS_PER_TOKEN = 750  # the published Claude image-token constant: ceil(w * h / 750)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SOI = b"\xff\xd8"
# JPEG start-of-frame markers carrying the dimensions (not DHT C4, JPG C8, DAC CC).
_JPEG_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


@dataclass(frozen=True)
class Media:
    """A validated inline image: the caller's base64 exactly as sent, and its decoded bytes."""

    mime: str
    bytes_b64: str
    data: bytes
    width: int | None
    height: int | None

    @property
    def tokens(self) -> int:
        """Token cost: from the pixel count when the header was read, else a base64 over-count."""
        if self.width and self.height:
            return max(1, math.ceil(self.width * self.height / PIXELS_PER_TOKEN))
        return max(1, math.ceil(len(self.bytes_b64) / 2))


def decode_media(mime: object, bytes_b64: object, where: str) -> Media:
    """Validate and decode one ``media`` object; raise InvalidInput naming ``where``."""
    if not isinstance(mime, str) or not mime.strip():
        raise InvalidInput(f"{where}.mime must be a non-empty string such as 'image/png'")
    if not isinstance(bytes_b64, str) or not bytes_b64:
        raise InvalidInput(f"{where}.bytes_b64 must be a non-empty base64 string")
    size = len(bytes_b64.encode("utf-8"))
    if size > MAX_MEDIA_B64_BYTES:
        raise InvalidInput(
            f"{where}.bytes_b64 is {size} bytes; the cap is {MAX_MEDIA_B64_BYTES} bytes of base64 "
            "(MAX_MEDIA_BYTES, about 3 MiB decoded)"
        )
    malformed = InvalidInput(f"{where}.bytes_b64 is not valid base64 (standard alphabet, padded)")
    if len(bytes_b64) % 4:
        raise malformed
    try:
        data = base64.b64decode(bytes_b64, validate=True)
    except (binascii.Error, ValueError):
        raise malformed from None
    if base64.b64encode(data).decode("ascii") != bytes_b64:  # stray padding or non-zero pad bits
        raise malformed
    if not data:
        raise InvalidInput(f"{where}.bytes_b64 decodes to zero bytes")
    width, height = image_dimensions(data)
    return Media(mime.strip(), bytes_b64, data, width, height)


def image_dimensions(data: bytes) -> tuple[int | None, int | None]:
    """(width, height) read from a PNG or JPEG header; (None, None) when unreadable."""
    if data.startswith(PNG_SIGNATURE) and len(data) >= 24 and data[12:16] == b"IHDR":
        w, h = struct.unpack(">II", data[16:24])
        return (w, h) if w and h else (None, None)
    if data.startswith(JPEG_SOI):
        return _jpeg_dimensions(data)
    return None, None


def _jpeg_dimensions(data: bytes) -> tuple[int | None, int | None]:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None, None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None, None
        if marker in _JPEG_SOF:
            if i + 9 > n:
                return None, None
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return (w, h) if w and h else (None, None)
        i += 2 + length
    return None, None


def png_bytes(width: int, height: int) -> bytes:
    """A minimal valid PNG header of the given size (tests and benchmarks)."""
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    return PNG_SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")

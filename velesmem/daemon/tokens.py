"""Bearer tokens: how one is made, named and hashed (standard library only, so the ``token``
command starts fast).

A token is ``vmt_`` + 32 random bytes in URL-safe base64 (``secrets.token_urlsafe``), shown once
when created. Only its SHA-256 is stored: the token carries 256 bits of randomness, so a plain
(unsalted, unkeyed) hash cannot be reversed or guessed, and a stolen store yields no usable
token. The daemon looks a presented token up by its hash, then compares the digests with
``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from velesmem import limits
from velesmem.errors import InvalidInput

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
# What a token looks like on the wire: the prefix, then URL-safe base64. A value of another
# shape is refused without a lookup.
_TOKEN = re.compile(rf"{re.escape(limits.AUTH_TOKEN_PREFIX)}[A-Za-z0-9_-]+")


def new_token() -> str:
    """A fresh random token (never stored: show it once)."""
    return limits.AUTH_TOKEN_PREFIX + secrets.token_urlsafe(limits.AUTH_TOKEN_BYTES)


def token_digest(token: str) -> str:
    """The SHA-256 hex digest stored for ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def digests_match(a: str, b: str) -> bool:
    """Constant-time comparison of two hex digests."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


def looks_like_token(value: str) -> bool:
    """Whether ``value`` has a token's shape and size (anything else cannot be one of ours)."""
    return len(value) <= limits.MAX_BEARER_BYTES and _TOKEN.fullmatch(value) is not None


def check_name(name: object) -> str:
    """A token name: 1-64 ASCII letters, digits, ``. _ @ -``, starting with a letter or digit.
    It is recorded as the author of every write made with the token."""
    if not isinstance(name, str) or not name:
        raise InvalidInput("a token needs a name (--name alice): it is recorded as the author of "
                           "every memory written with the token")
    if len(name) > limits.MAX_AUTH_TOKEN_NAME_BYTES or not _NAME.fullmatch(name):
        raise InvalidInput(f"token name {name!r} must be 1-{limits.MAX_AUTH_TOKEN_NAME_BYTES} "
                           "ASCII letters, digits, '.', '_', '@' or '-', starting with a letter "
                           "or digit")
    return name

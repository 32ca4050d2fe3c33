"""Timeouts and lifetimes of the HTTP daemon that users never set: the defaults from ``limits``,
shortened only by internal environment knobs so tests need not wait minutes or days."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from velesmem import limits
from velesmem.errors import Internal

# Internal knobs (tests use short values); not user settings, so not in config.SETTINGS.
SESSION_IDLE_ENV = "VELESMEM_INTERNAL_SESSION_IDLE_SECONDS"
REQUEST_TIMEOUT_ENV = "VELESMEM_INTERNAL_REQUEST_TIMEOUT_SECONDS"
LEAF_LIFETIME_ENV = "VELESMEM_INTERNAL_LEAF_LIFETIME_SECONDS"
BODY_QUEUE_ENV = "VELESMEM_INTERNAL_BODY_QUEUE_SECONDS"
SESSION_ADMIT_ENV = "VELESMEM_INTERNAL_SESSION_ADMIT_SECONDS"
# Which of uvicorn's HTTP/1.1 parsers serves (connections.PROTOCOLS): tests run both; default the fastest.
HTTP_PROTOCOL_ENV = "VELESMEM_INTERNAL_HTTP_PROTOCOL"

DAY_S = 24 * 3600


@dataclass(frozen=True)
class Tuning:
    """How long sessions idle, requests may take to arrive (a shorter one also shortens the
    keep-alive), large bodies wait for the body budget, an initialize waits for room at the session
    cap, and the TLS leaf lives; which HTTP parser
    serves (None: the default, ``connections.HTTP_PROTOCOL``)."""

    session_idle_s: float = float(limits.HTTP_SESSION_IDLE_SECONDS)
    request_timeout_s: float = float(limits.HTTP_REQUEST_TIMEOUT_SECONDS)
    body_queue_s: float = float(limits.HTTP_BODY_QUEUE_SECONDS)
    session_admit_s: float = float(limits.HTTP_SESSION_ADMIT_WAIT_SECONDS)
    leaf_lifetime_s: float = float(limits.LEAF_CERT_DAYS * DAY_S)
    http_protocol: str | None = None

    @property
    def keep_alive_s(self) -> float:
        return min(float(limits.HTTP_KEEP_ALIVE_SECONDS), self.request_timeout_s)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Tuning:
        """The defaults, with any internal knob set in ``environ`` (default ``os.environ``) applied."""
        env = os.environ if environ is None else environ
        default = cls()
        return cls(
            session_idle_s=_seconds(env, SESSION_IDLE_ENV, default.session_idle_s),
            request_timeout_s=_seconds(env, REQUEST_TIMEOUT_ENV, default.request_timeout_s),
            body_queue_s=_seconds(env, BODY_QUEUE_ENV, default.body_queue_s),
            session_admit_s=_seconds(env, SESSION_ADMIT_ENV, default.session_admit_s),
            leaf_lifetime_s=_seconds(env, LEAF_LIFETIME_ENV, default.leaf_lifetime_s),
            http_protocol=env.get(HTTP_PROTOCOL_ENV) or None,
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise Internal(f"{name}={raw!r} is not a number") from None
    if not value > 0:
        raise Internal(f"{name}={raw!r} must be positive")
    return value

"""Renew the TLS leaf while the daemon runs, so an autostarted daemon never outlives its certificate.

Once less than a third of the leaf's lifetime remains, a fresh leaf is signed by the same CA, written
over the old files, and loaded into the live server context: new handshakes get it, connections
already open keep the one they negotiated, and clients need no new trust and no restart.
"""

from __future__ import annotations

import logging

import asyncio
import datetime as dt
import ssl
from collections.abc import Callable

from velesmem import limits
from velesmem.daemon.tls import TlsFiles, leaf_expiry, renew_leaf

log = logging.getLogger("velesmem.daemon")

CHECKS_PER_MARGIN = 4  # looks per renewal margin, so a renewal is never a whole margin late


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _say(line: str) -> None:
    """A lifecycle line for the daemon log (through logging, as every message)."""
    log.info(line)


class LeafRenewer:
    """Watches the served leaf's expiry and swaps in a fresh one, same CA, before it lapses."""

    def __init__(
        self,
        files: TlsFiles,
        context: ssl.SSLContext,
        lifetime_s: float,
        *,
        clock: Callable[[], dt.datetime] = _utcnow,
    ) -> None:
        self.files = files
        self.context = context
        self.lifetime = dt.timedelta(seconds=lifetime_s)
        self.margin = self.lifetime * limits.LEAF_RENEW_FRACTION
        self.clock = clock
        self.expires = leaf_expiry(files)
        self.renewals = 0

    @property
    def check_interval_s(self) -> float:
        """Seconds between looks at the leaf: a fraction of the margin, at most an hour."""
        return min(float(limits.LEAF_RENEW_CHECK_MAX_SECONDS), self.margin.total_seconds() / CHECKS_PER_MARGIN)

    def due(self) -> bool:
        """True once less than the renewal margin (a third of the lifetime) remains."""
        return self.expires - self.clock() < self.margin

    def renew_if_due(self) -> bool:
        """Issue and load a fresh leaf when due; True if it did. Runs on the event loop thread, which
        also creates every new TLS connection from this context (a P-256 key and one signature: ~ms)."""
        if not self.due():
            return False
        expires = renew_leaf(self.files, now=self.clock(), leaf_lifetime=self.lifetime)
        self.context.load_cert_chain(self.files.leaf_cert, self.files.leaf_key)
        self.expires = expires
        self.renewals += 1
        _say(f"renewed the TLS leaf certificate (same CA, no restart); valid until "
             f"{expires:%Y-%m-%d %H:%M:%S} UTC")
        return True

    async def run(self) -> None:
        """Check forever; a failed renewal is reported and retried at the next check."""
        while True:
            await asyncio.sleep(self.check_interval_s)
            try:
                self.renew_if_due()
            except Exception as exc:  # noqa: BLE001 — keep serving on the current leaf, retry later
                _say(f"could not renew the TLS leaf certificate ({exc}); serving the current one "
                     f"until {self.expires:%Y-%m-%d %H:%M:%S} UTC, retrying")

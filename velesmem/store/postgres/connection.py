"""Connections to the PostgreSQL store: opening, adapters, the pool, worded errors.

Every connection is in autocommit mode (a write opens its own transaction), reads metadata
``jsonb`` back with its keys in code-point order (as the SQLite backend stores them), binds key
sets as one binary ``bigint[]`` packed by numpy (``Keys``), and knows pgvector's ``vector``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import adapt, pq
from psycopg.types.json import set_json_loads

from velesmem.errors import Internal, StoreUnreachable

CONNECT_TIMEOUT_S = 10
INT8_OID = 20
INT8_ARRAY_OID = 1016
EF_SEARCH = 100  # HNSW candidate list per query (pgvector's default is 40)
APPLICATION = "velesmem"
# Over TCP, a server that vanished without closing its connections (a host down, a network
# partition) is noticed within seconds, not at the kernel's retransmission timeout (minutes):
# unacknowledged data fails after 5 s, an idle connection is probed after 5 s, twice, 2 s apart.
# (Ignored on Unix sockets, where a stopped server closes the socket.)
TCP_OPTIONS: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
                               "keepalives_count": 2, "tcp_user_timeout": 5_000}


def redact(url: str) -> str:
    """``url`` without its password (a URL's ``:password@`` or a DSN's ``password=``)."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.password is not None:
            user = parts.username or ""
            host = parts.hostname or ""
            if ":" in host:
                host = f"[{host}]"
            port = f":{parts.port}" if parts.port else ""
            netloc = f"{user}@{host}{port}" if user else f"{host}{port}"
            parts = parts._replace(netloc=netloc)
        query = "&".join(p for p in parts.query.split("&")
                         if not p.lower().startswith("password="))
        return urlunsplit(parts._replace(query=query))
    return " ".join(p for p in url.split() if not p.lower().startswith("password="))


def _sorted_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(sorted(pairs))


def _loads(data: bytes | str) -> Any:
    """jsonb as Python with every object's keys in code-point order (jsonb keeps its own order:
    shorter keys first), so metadata reads back exactly as the SQLite backend returns it."""
    return json.loads(data, object_pairs_hook=_sorted_object)


class Keys:
    """A set of int64 keys bound as one binary ``bigint[]`` parameter (use ``%b``)."""

    __slots__ = ("array",)

    def __init__(self, keys: Iterable[int] | np.ndarray) -> None:
        if not isinstance(keys, np.ndarray):
            keys = np.fromiter(keys, dtype=np.int64)
        self.array = np.ascontiguousarray(keys, dtype=np.int64)


class KeysDumper(adapt.Dumper):
    """``Keys`` → PostgreSQL's binary array format, built by numpy (no per-item Python)."""

    format = pq.Format.BINARY
    oid = INT8_ARRAY_OID

    def dump(self, obj: Keys) -> bytes:
        n = len(obj.array)
        if n == 0:
            return struct.pack(">iii", 0, 0, INT8_OID)
        body = np.empty(n, dtype=[("size", ">i4"), ("value", ">i8")])
        body["size"] = 8
        body["value"] = obj.array
        return struct.pack(">iiiii", 1, 0, INT8_OID, n, 1) + body.tobytes()


def configure(conn: psycopg.Connection[Any]) -> None:
    """Adapters and session settings of every store connection (the extension must exist)."""
    from pgvector.psycopg import register_vector

    set_json_loads(_loads, conn)
    conn.adapters.register_dumper(Keys, KeysDumper)
    register_vector(conn)
    conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    # A filtered HNSW scan goes on past ef_search until it has enough matching rows.
    conn.execute("SET hnsw.iterative_scan = strict_order")


def connect(url: str) -> psycopg.Connection[Any]:
    """One autocommit connection, without the store's adapters (see ``configure``)."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name=APPLICATION, **TCP_OPTIONS)
    except psycopg.Error as exc:
        raise unreachable(url, exc) from None


def unreachable_message(url: str, exc: BaseException) -> str:
    """Why the server at ``url`` cannot be reached, worded, without the URL's password."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (f"cannot reach PostgreSQL at {redact(url)}: {detail}. Check "
            "VELESDB_MEMORY_DATABASE_URL (postgresql://user:password@host:5432/db) and that the "
            "server is running and reachable")


def unreachable(url: str, exc: BaseException) -> StoreUnreachable:
    return StoreUnreachable(unreachable_message(url, exc))


def failed(location: str, exc: psycopg.Error) -> Internal:
    """The worded error for a statement PostgreSQL refused (nothing was committed)."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Internal(f"the PostgreSQL store {location} failed: {detail}. Nothing was changed")


__all__ = ["EF_SEARCH", "TCP_OPTIONS", "Keys", "configure", "connect", "failed", "redact",
           "unreachable",
           "unreachable_message"]

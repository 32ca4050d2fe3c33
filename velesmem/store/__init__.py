"""The storage protocol and its backends, chosen by name (``VELESDB_MEMORY_BACKEND``).

``open_store(settings, identity, now)`` opens the configured backend; ``identity`` None opens
it for reading and maintenance only (export, verify). The protocol is in ``protocol``: small
roles (``roles``) over the values in ``types``, and ``Store``, their union; the metadata predicate
tree is in ``predicates``, the domain rules every SQL backend shares in ``rules``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from velesmem.errors import Internal
from velesmem.store.protocol import (
    ENTITY_HUB_KIND,
    HUB_NAME_KEY,
    HUB_SOURCE_KEY,
    TERMINAL_STATES,
    Counts,
    CurationStore,
    Edge,
    EmbeddingStore,
    ExpiryStore,
    FactStore,
    FactWrite,
    GraphWrite,
    HubWrite,
    Identity,
    Job,
    JobStore,
    LifecycleStore,
    MaintenanceStore,
    Problem,
    SearchStore,
    SourceStore,
    Space,
    SpaceStore,
    Store,
    StoredFact,
    TokenRecord,
    TokenStore,
    Uncurated,
    WarmProgress,
)

if TYPE_CHECKING:
    from velesmem.config import Settings

BACKENDS = ("sqlite", "postgres")

Opener = Callable[["Settings", "Identity | None", float], Store]


def load(name: str) -> Opener:
    """The opener of backend ``name``; Internal listing the backends for any other name."""
    if name == "sqlite":
        from velesmem.store.sqlite.backend import SqliteStore

        return lambda settings, identity, now: SqliteStore.open(settings.path, identity, now)
    if name == "postgres":
        try:
            from velesmem.store.postgres.backend import open_postgres
        except ImportError as exc:
            raise Internal(f"the postgres backend needs the extra: pip install "
                           f"'velesmem[postgres]' ({exc})") from None
        return open_postgres
    raise Internal(f"unknown backend {name!r} (VELESDB_MEMORY_BACKEND): expected one of "
                   f"{', '.join(BACKENDS)}")


def open_store(settings: Settings, identity: Identity | None, now: float) -> Store:
    return load(settings.backend)(settings, identity, now)


def open_token_store(settings: Settings, now: float) -> TokenStore:
    """The token table of the configured store, for ``velesdb-memory token``: usable while a
    daemon serves the store (with SQLite, a connection of its own beside the daemon's; with
    PostgreSQL, the store itself, which many processes share). Close it when done."""
    if settings.backend == "sqlite":
        from velesmem.store.sqlite.tokens import open_tokens

        return open_tokens(settings.path, now)
    return open_store(settings, None, now)


__all__ = ["BACKENDS", "ENTITY_HUB_KIND", "HUB_NAME_KEY", "HUB_SOURCE_KEY", "TERMINAL_STATES",
           "Counts", "CurationStore", "Edge", "EmbeddingStore", "ExpiryStore", "FactStore", "FactWrite",
           "GraphWrite", "HubWrite", "Identity", "Job", "JobStore", "LifecycleStore",
           "MaintenanceStore", "Problem", "SearchStore", "SourceStore", "Space", "SpaceStore",
           "Store", "StoredFact", "TokenRecord", "TokenStore", "Uncurated", "WarmProgress", "load",
           "open_store", "open_token_store"]

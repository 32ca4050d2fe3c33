"""The store: one locked directory holding SQLite (source of truth) and a derived FAISS index."""

from velesmem.store.lock import LOCK_FIX, StoreLock
from velesmem.store.store import DB_FILE, Identity, Store
from velesmem.store.vector_index import VectorIndex
from velesmem.store.writer import Outcome

__all__ = ["DB_FILE", "LOCK_FIX", "Identity", "Outcome", "Store", "StoreLock", "VectorIndex"]

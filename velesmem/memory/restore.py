"""Restore a checked export into a store: all of it in one transaction, or nothing.

The file was checked first (``import_file``); here the store answers what only it can: which
facts and edges are already stored exactly so (left alone, so a second run changes nothing),
and whether an edge's end that the file does not hold is a live fact. Facts already expired
are skipped with the edges that touch them. User facts are embedded again by the store's own
embedder (so a backup moves between embedders), then everything is written through the
store's ``restore_all``: metadata verbatim (``_veles_author`` included), learned confidence and
counts, times and expiry, internal scaffolding, edges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from velesmem import limits
from velesmem.embed.base import Embedder
from velesmem.errors import NotFound
from velesmem.ids import to_i64
from velesmem.memory.import_file import CheckedFile, FactLine
from velesmem.store import FactStore, MaintenanceStore, StoredFact
from velesmem.store.types import RestoredFact, RestoreWrite
from velesmem.validate import dumps


class RestoreStore(FactStore, MaintenanceStore, Protocol):
    """The store roles an import uses: what is stored already, and the one-transaction write."""


LOOKUP_BATCH = 512  # facts looked up in the store at once
EMBED_BATCH = 256  # texts handed to the embedder at once
ALL_EDGES = 1 << 31  # out_edges limit meaning "every one"


@dataclass(frozen=True)
class RestoreReport:
    """What an import did: facts and edges written, left as they were, skipped as expired,
    and lines that repeated an earlier one."""

    facts: int
    edges: int
    unchanged: int
    expired: int
    repeated: int


def restore(store: RestoreStore, embedder: Embedder, checked: CheckedFile, now: float,
            step: Callable[[str, int, int], None] = lambda phase, done, total: None,
            pool: Executor | None = None) -> RestoreReport:
    """Write ``checked`` into ``store`` in one transaction (see the module docstring); a fact
    or edge the store refuses raises, and then nothing was written. ``step(phase, done,
    total)`` hears progress: facts compared with the store, then facts embedded. With a
    ``pool`` (the Runtime's workers), each batch is embedded in parts at once."""
    expired = {f.id for f in checked.facts if f.expires_at is not None and f.expires_at <= now}
    skipped = sum(1 for e in checked.edges if e.src in expired or e.dst in expired)
    edges = [e for e in checked.edges if e.src not in expired and e.dst not in expired]
    outside = sorted(checked.outside - expired)
    found = store.facts([to_i64(k) for k in outside], now, user_only=False) if outside else {}
    for e in edges:  # before any embedding: a dangling edge refuses the whole file at once
        for name, end in (("from", e.src), ("to", e.dst)):
            if end in checked.outside and to_i64(end) not in found:
                raise NotFound(f"line {e.line}: the edge's {name} {end} is neither a fact in "
                               "the file nor a stored memory; nothing was imported")
    unchanged = 0
    todo: list[FactLine] = []
    for start in range(0, len(checked.facts), LOOKUP_BATCH):
        step("compared", start, len(checked.facts))
        batch = [f for f in checked.facts[start:start + LOOKUP_BATCH] if f.id not in expired]
        stored = store.facts([to_i64(f.id) for f in batch], now, user_only=False)
        for f in batch:
            if _same(stored.get(to_i64(f.id)), f):
                unchanged += 1
            else:
                todo.append(f)
    users = [f for f in todo if f.kind is None]
    vectors = {}
    for start in range(0, len(users), EMBED_BATCH):
        step("embedded", start, len(users))
        batch = users[start:start + EMBED_BATCH]
        for f, vector in zip(batch, embed_parts(embedder, [f.content for f in batch], pool)):
            vectors[f.id] = vector
    existing: dict[int, set[tuple[int, str]]] = {}
    new_edges = []
    for e in edges:
        src = to_i64(e.src)
        if src not in existing:
            existing[src] = set(store.out_edges(src, now, ALL_EDGES))
        if (to_i64(e.dst), e.relation) in existing[src]:
            unchanged += 1
        else:
            new_edges.append((src, to_i64(e.dst), e.relation))
    write = RestoreWrite(now, tuple(
        RestoredFact(to_i64(f.id), f.content, f.metadata_json, f.kind, vectors.get(f.id),
                     f.confidence, f.successes, f.failures, f.created_at, f.updated_at,
                     f.expires_at) for f in todo), tuple(new_edges))
    if write.facts or write.edges:
        store.restore_all(write).result()
    return RestoreReport(len(write.facts), len(write.edges), unchanged,
                         len(expired) + skipped, checked.repeated)


def embed_parts(embedder: Embedder, texts: Sequence[str], pool: Executor | None) -> np.ndarray:
    """``embedder.embed(texts)``, split into IMPORT_EMBED_PARTS calls run at once on ``pool``
    (rows in the order of ``texts``); one call without a pool."""
    if pool is None or len(texts) < 2:
        return embedder.embed(texts)
    size = -(-len(texts) // limits.IMPORT_EMBED_PARTS)
    parts = [pool.submit(embedder.embed, texts[i:i + size]) for i in range(0, len(texts), size)]
    return np.concatenate([part.result() for part in parts])


def _same(stored: StoredFact | None, line: FactLine) -> bool:
    return (stored is not None and stored.content == line.content
            and dumps(stored.metadata) == line.metadata_json and stored.kind == line.kind
            and stored.confidence == line.confidence and stored.successes == line.successes
            and stored.failures == line.failures and stored.created_at == line.created_at
            and stored.updated_at == line.updated_at and stored.expires_at == line.expires_at)


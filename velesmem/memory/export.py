"""Export a store to JSON Lines without the embedder (works on a mismatched store).

One ``{"type": "fact", ...}`` line per live fact in ascending u64 id order, then one
``{"type": "edge", ...}`` line per edge between exported facts. Without ``include_internal`` the
scaffolding (and edges touching it) is left out and reserved metadata keys are stripped, as
recall shows them; with it, everything is written verbatim. Everything comes from one consistent
snapshot of the store, so a store a running daemon serves can be exported while it serves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from velesmem.ids import to_u64
from velesmem.store import Edge, MaintenanceStore, StoredFact
from velesmem.validate import visible_metadata

FILE_MODE = 0o600


def export_store(store: MaintenanceStore, output: Path, *, include_internal: bool,
                 now: float) -> tuple[int, int]:
    """Write ``store`` to ``output`` (owner-only, atomically); return (facts, edges) written."""
    tmp = output.with_name(output.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            counts = _write(store, fh, include_internal, now)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, output)
        return counts
    finally:
        if tmp.exists():
            tmp.unlink()


def _write(store: MaintenanceStore, fh: IO[str], include_internal: bool, now: float) -> tuple[int, int]:
    exported: set[int] = set()
    facts = edges = 0
    for item in store.export(now, include_internal=include_internal):
        if isinstance(item, StoredFact):
            fid = to_u64(item.key)
            exported.add(item.key)
            line = {"type": "fact", "id": fid, "id_str": str(fid), "content": item.content,
                    "metadata": item.metadata if include_internal
                    else visible_metadata(item.metadata),
                    "confidence": item.confidence, "successes": item.successes,
                    "failures": item.failures, "created_at": item.created_at,
                    "updated_at": item.updated_at, "expires_at": item.expires_at}
            if include_internal:
                line["kind"] = item.kind
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            facts += 1
        elif isinstance(item, Edge):
            if item.src not in exported or item.dst not in exported:
                continue
            e, f, t = to_u64(item.key), to_u64(item.src), to_u64(item.dst)
            fh.write(json.dumps({"type": "edge", "edge_id": e, "edge_id_str": str(e), "from": f,
                                 "from_str": str(f), "to": t, "to_str": str(t),
                                 "relation": item.relation}, ensure_ascii=False) + "\n")
            edges += 1
    return facts, edges

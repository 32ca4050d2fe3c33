"""Export a store to JSON Lines without the embedder (works on a mismatched store).

One ``{"type": "fact", ...}`` line per live fact in ascending u64 id order, then one
``{"type": "edge", ...}`` line per edge between exported facts. Without ``include_internal`` the
scaffolding (and edges touching it) is left out and reserved metadata keys are stripped, as
recall shows them; with it, everything is written verbatim. The store's lock is taken, so a
store served by a daemon is refused with the lock message.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import IO

from velesmem.ids import to_u64
from velesmem.memory.validate import visible_metadata
from velesmem.store import Store


def export_store(directory: Path, output: Path, *, include_internal: bool = False,
                 now: float | None = None) -> tuple[int, int]:
    """Write the store at ``directory`` to ``output``; return (facts, edges) written."""
    now = time.time() if now is None else now
    store = Store.open(directory, None, now)
    tmp = output.with_name(output.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            counts = _write(store, fh, include_internal, now)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, output)
        return counts
    finally:
        if tmp.exists():
            tmp.unlink()
        store.close()


def _write(store: Store, fh: IO[str], include_internal: bool, now: float) -> tuple[int, int]:
    conn = store.reader()
    kind = "" if include_internal else " AND kind IS NULL"
    rows = conn.execute(
        "SELECT id, content, metadata, kind, confidence, successes, failures, created_at, "
        f"updated_at, expires_at FROM facts WHERE (expires_at IS NULL OR expires_at > ?){kind}",
        (now,)).fetchall()
    rows.sort(key=lambda r: to_u64(r[0]))
    exported = set()
    for key, content, meta, k, conf, ok, bad, created, updated, expires in rows:
        fid = to_u64(key)
        exported.add(key)
        metadata = json.loads(meta)
        line = {"type": "fact", "id": fid, "id_str": str(fid), "content": content,
                "metadata": metadata if include_internal else visible_metadata(metadata),
                "confidence": conf, "successes": ok, "failures": bad, "created_at": created,
                "updated_at": updated, "expires_at": expires}
        if include_internal:
            line["kind"] = k
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    edges = 0
    for eid, src, dst, relation in conn.execute(
            "SELECT id, src, dst, relation FROM edges ORDER BY id"):
        if src not in exported or dst not in exported:
            continue
        e, f, t = to_u64(eid), to_u64(src), to_u64(dst)
        fh.write(json.dumps({"type": "edge", "edge_id": e, "edge_id_str": str(e), "from": f,
                             "from_str": str(f), "to": t, "to_str": str(t),
                             "relation": relation}, ensure_ascii=False) + "\n")
        edges += 1
    return len(rows), edges

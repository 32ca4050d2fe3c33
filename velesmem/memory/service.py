"""MemoryService: one method per memory tool, typed results, domain errors.

Thread-safe: writes go through the store's single writer thread (group commit), reads run
concurrently on per-thread SQLite connections and a readers-writer-locked FAISS index. Every
method validates its inputs before touching the store, so a refused call changes nothing.
Time comes from the injected clock (TTL expiry, ``_veles_date``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from velesmem import limits
from velesmem.config import Settings
from velesmem.embed import Embedder, load_embedder
from velesmem.errors import InvalidInput
from velesmem.ids import fact_id, parse_id, to_i64, to_u64
from velesmem.memory import filters as mfilters
from velesmem.memory import validate, writes
from velesmem.memory.graph import walk
from velesmem.memory.ranking import Ranked, Ranker, live_confidences
from velesmem.memory.results import (
    FeedbackResult,
    ForgetResult,
    FusedResult,
    InternalFact,
    ListedMemory,
    ListResult,
    Memory,
    RecallResult,
    RelateResult,
    RememberResult,
    StatusResult,
    UnrelateResult,
    WhyEdge,
    WhyNode,
    WhyResult,
)
from velesmem.store import Identity, Store
from velesmem.store.store import read_provenance

LIVE = "(expires_at IS NULL OR expires_at > ?)"
_I64_MIN = -(1 << 63)


class MemoryService:
    """The memory engine over one open store directory (a context manager)."""

    def __init__(self, store: Store, embedder: Embedder, clock: Callable[[], float],
                 settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._clock = clock
        self._ranker = Ranker(store, embedder, settings.recall_mode)

    @classmethod
    def open(cls, path: str | Path | None = None, *, embedder: Embedder | None = None,
             clock: Callable[[], float] | None = None,
             settings: Settings | None = None) -> MemoryService:
        """Open (creating if needed) and lock the store at ``path`` (default settings.path)."""
        settings = settings if settings is not None else Settings.from_env()
        if path is not None:
            settings = settings.with_overrides(path=Path(path).expanduser())
        clock = clock if clock is not None else time.time
        embedder = embedder if embedder is not None else load_embedder(settings)
        store = Store.open(settings.path, Identity(embedder.model, embedder.dimension),
                           float(clock()))
        service = cls(store, embedder, clock, settings)
        try:
            service._purge_due()
        except BaseException:
            store.close()
            raise
        return service

    def close(self) -> None:
        """Finish pending writes, save the index and release the lock (idempotent)."""
        self.store.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> float:
        """The injected clock, epoch seconds."""
        return float(self._clock())

    def _purge_due(self) -> float:
        """Purge expired facts if one may have expired; return the current time."""
        now = self.now()
        nxt = self.store.next_expiry
        if nxt is not None and now >= nxt:
            self.store.writer.submit(writes.purge_expired(self.store, now))
        return now

    def _today(self, now: float) -> int:
        d = _dt.datetime.fromtimestamp(now, tz=_dt.timezone.utc).date()
        return d.year * 10000 + d.month * 100 + d.day

    # --- writes ------------------------------------------------------------------------------
    def remember(self, fact: str, links: list[dict] | None = None,
                 metadata: dict | None = None, ttl_seconds: int | None = None) -> RememberResult:
        """Store a fact (same text → same id, updated in place); links and TTL optional."""
        content = validate.fact_text(fact)
        fid = fact_id(content)
        pairs = validate.links(links, fid)
        ttl = validate.ttl(ttl_seconds, self.settings.default_ttl)
        _, meta_json = validate.metadata(metadata, today=self._today(self.now()))
        now = self._purge_due()
        vector = self.embedder.embed([content])[0]
        write = writes.FactWrite(fid, content, meta_json, vector, now,
                                 None if ttl is None else now + ttl, pairs)
        return RememberResult(self.store.writer.submit(writes.remember(self.store, write)))

    def relate(self, from_id: Any, to_id: Any, relation: str) -> RelateResult:
        """Create the edge from → to (idempotent: an existing triple answers its id)."""
        src, dst = parse_id(from_id, "from"), parse_id(to_id, "to")
        rel = validate.relation(relation)
        if src == dst:
            raise InvalidInput("from and to are the same memory: an edge needs two ends")
        now = self._purge_due()
        return RelateResult(self.store.writer.submit(writes.relate(src, dst, rel, now)))

    def unrelate(self, from_id: Any, to_id: Any, relation: str) -> UnrelateResult:
        """Remove the edge from → to (idempotent: found false when absent)."""
        src, dst = parse_id(from_id, "from"), parse_id(to_id, "to")
        rel = validate.relation(relation)
        if src == dst:
            raise InvalidInput("from and to are the same memory: an edge needs two ends")
        self._purge_due()
        removed = self.store.writer.submit(writes.unrelate(src, dst, rel))
        return UnrelateResult(found=removed > 0, removed=removed)

    def forget(self, id: Any) -> ForgetResult:
        """Delete a fact and its edges (and entity hubs left orphaned); found false if absent."""
        fid = parse_id(id, "id")
        now = self._purge_due()
        return ForgetResult(fid, self.store.writer.submit(writes.forget(self.store, fid, now)))

    def feedback(self, id: Any, success: bool) -> FeedbackResult:
        """Nudge a fact's confidence (+0.1 / −0.05, clamped to [0, 1]) atomically."""
        fid = parse_id(id, "id")
        ok = validate.boolean(success, "success")
        now = self._purge_due()
        return FeedbackResult(fid, self.store.writer.submit(writes.feedback(fid, ok, now)))

    def confidences(self, ids: Iterable[Any]) -> dict[int, float]:
        """The learned confidence of each live user fact among ``ids``; others are left out."""
        wanted = [to_i64(parse_id(i, "id")) for i in ids]
        found = live_confidences(self.store.reader(), wanted, self.now())
        return {to_u64(i): c for i, c in found.items()}

    # --- recall ------------------------------------------------------------------------------
    def recall(self, query: str, k: int = limits.DEFAULT_RECALL_K,
               filter: dict | None = None) -> RecallResult:
        """The k best facts for ``query`` (hybrid by default) among those matching ``filter``."""
        q = validate.query(query)
        k = _k(k)
        cond = mfilters.exact(filter)
        now = self._purge_due()
        return RecallResult(self._memories(self._ranker.rank(q, k, cond, now), now))

    def recall_where(self, query: str, filters: list[dict],
                     k: int = limits.DEFAULT_RECALL_K) -> RecallResult:
        """Like recall, constrained by typed predicates ``[{field, op, value}]`` (ANDed; an empty
        list constrains nothing). Internal scaffolding is never returned."""
        q = validate.query(query)
        cond = mfilters.predicates(filters)
        k = _k(k)
        now = self._purge_due()
        return RecallResult(self._memories(self._ranker.rank(q, k, cond, now), now))

    def recall_fused(self, query: str, k: int = limits.DEFAULT_RECALL_K,
                     filter: dict | None = None, hops: int = limits.DEFAULT_FUSED_HOPS,
                     graph_boost: float = limits.DEFAULT_GRAPH_BOOST, pool: int | None = None,
                     date_field: str | None = None) -> FusedResult:
        """recall plus a graph walk from the top hit whose reach is boosted into the ranking."""
        q = validate.query(query)
        k = _k(k)
        cond = mfilters.exact(filter)
        hops = validate.count(hops, "hops", default=limits.DEFAULT_FUSED_HOPS, low=0,
                              high=limits.MAX_FUSED_HOPS)
        boost = validate.finite(graph_boost, "graph_boost", default=limits.DEFAULT_GRAPH_BOOST,
                                low=0.0)
        depth = _pool(pool, k)
        field = None if date_field is None else validate.field_name(date_field, "date_field")
        now = self._purge_due()
        ranked = self._ranker.rank(q, depth, cond, now)
        fused: dict[int, float] = {}
        cosine: dict[int, float] = {}
        top = max((r.relevance for r in ranked), default=0.0)
        for r in ranked:
            fused[r.id] = r.relevance / top if top > 0 else 0.0
            cosine[r.id] = r.cosine
        if ranked:
            conn = self.store.reader()
            reach = walk(conn, ranked[0].id, hops, now)
            weights = self._reach_weights(reach.nodes, cond, now)
            for node, weight in weights.items():
                fused[node] = fused.get(node, 0.0) + boost * weight
        order = sorted(fused, key=lambda i: (-fused[i], to_u64(i)))[:k]
        memories = self._memories([Ranked(i, fused[i], cosine.get(i, 0.0)) for i in order], now)
        if field is None:
            return FusedResult(memories)
        dated, latest = _dated_context(memories, field)
        return FusedResult(memories, dated, latest)

    def _reach_weights(self, nodes: dict[int, int], cond: mfilters.Condition,
                       now: float) -> dict[int, float]:
        """Walk-reached user facts (the seed excluded) matching the filter → the highest entity
        idf of a hub in the walk that mentions them (ln(n/degree)/ln(n)), else 1.0."""
        reached = [i for i, hop in nodes.items() if hop > 0]
        if not reached:
            return {}
        conn = self.store.reader()
        ids = json.dumps(reached)
        facts = {int(i) for (i,) in conn.execute(
            f"SELECT id FROM facts WHERE id IN (SELECT value FROM json_each(?)) AND kind IS NULL "
            f"AND {LIVE} AND ({cond.sql})", (ids, now, *cond.params))}
        hubs = [int(i) for (i,) in conn.execute(
            "SELECT id FROM facts WHERE id IN (SELECT value FROM json_each(?)) AND kind = ?",
            (ids, writes.ENTITY_HUB_KIND))]
        weights = {i: 1.0 for i in facts}
        if hubs:
            n = conn.execute(f"SELECT count(*) FROM facts WHERE kind IS NULL AND {LIVE}",
                             (now,)).fetchone()[0]
            best: dict[int, float] = {}
            for hub in hubs:
                targets = [int(d) for (d,) in conn.execute("SELECT dst FROM edges WHERE src = ?",
                                                           (hub,))]
                degree = max(len(targets), 1)
                idf = math.log(n / degree) / math.log(n) if n > 1 else 1.0
                for t in targets:
                    if t in facts:
                        best[t] = max(best.get(t, -math.inf), max(idf, 0.0))
            weights.update(best)
        return weights

    def why(self, decision: str, max_hops: int = limits.DEFAULT_WHY_HOPS,
            filter: dict | None = None) -> WhyResult:
        """The best-matching fact (filter scopes it) and the subgraph reachable from it."""
        q = validate.query(decision, "decision")
        hops = validate.count(max_hops, "max_hops", default=limits.DEFAULT_WHY_HOPS, low=0,
                              high=limits.MAX_WHY_HOPS)
        cond = mfilters.exact(filter)
        now = self._purge_due()
        seed = self._ranker.rank(q, 1, cond, now)
        if not seed:
            return WhyResult([], [], False)
        conn = self.store.reader()
        reach = walk(conn, seed[0].id, hops, now)
        content = {int(i): c for i, c in conn.execute(
            "SELECT id, content FROM facts WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(reach.nodes)),))}
        nodes = [WhyNode(to_u64(i), content.get(i, ""), hop) for i, hop in reach.nodes.items()]
        edges = [WhyEdge(to_u64(s), to_u64(d), rel) for s, d, rel in reach.edges]
        return WhyResult(nodes, edges, reach.truncated)

    def _memories(self, ranked: list[Ranked], now: float) -> list[Memory]:
        if not ranked:
            return []
        conn = self.store.reader()
        marks = ",".join("?" * len(ranked))  # at most 1,000 (the k and pool caps)
        rows = {int(i): (c, m) for i, c, m in conn.execute(
            f"SELECT id, content, metadata FROM facts WHERE id IN ({marks}) "
            f"AND kind IS NULL AND {LIVE}", (*(r.id for r in ranked), now))}
        out = []
        for r in ranked:
            row = rows.get(r.id)
            if row is not None:
                meta = validate.visible_metadata(json.loads(row[1]))
                out.append(Memory(to_u64(r.id), float(r.cosine), row[0], meta))
        return out

    # --- audit -------------------------------------------------------------------------------
    def list_memories(self, cursor: Any = None, limit: int = limits.DEFAULT_LIST_LIMIT,
                      filter: dict | None = None, include_internal: bool = False) -> ListResult:
        """A page of facts in ascending u64 id order after ``cursor`` (next_cursor None: done)."""
        after = None if cursor is None else parse_id(cursor, "cursor")
        if limit is None:
            limit = limits.DEFAULT_LIST_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInput(f"limit must be an integer, got {type(limit).__name__}")
        limit = min(max(limit, 1), limits.MAX_LIST_LIMIT)
        internal = validate.boolean(include_internal, "include_internal")
        cond = mfilters.exact(filter, allow_reserved=internal)
        now = self._purge_due()
        kind = "" if internal else " AND kind IS NULL"
        base = (f"SELECT id, content, metadata FROM facts WHERE {LIVE}{kind} AND ({cond.sql})")
        rows: list[tuple[int, str, str]] = []
        # u64 order = the non-negative int64 keys ascending, then the negative ones ascending.
        segments = []
        if after is None or after < (1 << 63):
            low = -1 if after is None else after
            segments.append(("id >= 0 AND id > ?", low))
            segments.append(("id < 0 AND id >= ?", _I64_MIN))
        else:
            segments.append(("id < 0 AND id > ?", to_i64(after)))
        for where, bound in segments:
            need = limit + 1 - len(rows)
            if need <= 0:
                break
            rows += conn_rows(self.store.reader(), f"{base} AND {where} ORDER BY id LIMIT ?",
                              (now, *cond.params, bound, need))
        more = len(rows) > limit
        rows = rows[:limit]
        memories = []
        for i, content, meta_json in rows:
            meta = json.loads(meta_json)
            memories.append(ListedMemory(to_u64(i), content,
                                         meta if internal else validate.visible_metadata(meta)))
        next_cursor = str(memories[-1].id) if more and memories else None
        return ListResult(memories, next_cursor)

    def memory_status(self) -> StatusResult:
        """What embeds (running), what filled the store (provenance), extraction, corpus size."""
        now = self._purge_due()
        conn = self.store.reader()
        recorded = read_provenance(conn)
        facts = conn.execute(f"SELECT count(*) FROM facts WHERE kind IS NULL AND {LIVE}",
                             (now,)).fetchone()[0]
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
        return StatusResult(
            embedder={"model": self.embedder.model, "dimension": self.embedder.dimension,
                      "semantic": bool(self.embedder.semantic)},
            provenance={"recorded": recorded is not None,
                        "model": recorded.model if recorded else None,
                        "dimension": recorded.dimension if recorded else None},
            extraction={"configured": False, "autograph_active": False, "autograph_dropped": 0},
            memory={"facts": int(facts), "edges": int(edges)},
        )

    # --- internal scaffolding ----------------------------------------------------------------
    def put_internal(self, id: int, content: str, metadata: dict, *, kind: str,
                     ttl_seconds: int | None = None) -> int:
        """Upsert an internal fact (no embedding; invisible to recall and default listing).

        ``ttl_seconds`` sets a real expiry, like remember's: past it the fact is invisible and
        purged. Without it the fact is permanent (an upsert drops an earlier expiry)."""
        fid = parse_id(id, "id")
        ttl = validate.ttl(ttl_seconds, None)
        text = validate.text(content, "content", limits.MAX_INTERNAL_BYTES, allow_empty=True)
        kind = validate.text(kind, "kind", limits.MAX_FIELD_NAME_BYTES)
        if not isinstance(metadata, dict):
            raise InvalidInput(f"metadata must be an object, got {type(metadata).__name__}")
        try:
            meta_json = validate.dumps(metadata)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"metadata is not JSON-serializable: {exc}") from None
        if len(meta_json.encode("utf-8", "surrogatepass")) > limits.MAX_INTERNAL_BYTES:
            raise InvalidInput(f"metadata is over the {limits.MAX_INTERNAL_BYTES}-byte cap")
        now = self._purge_due()
        return self.store.writer.submit(writes.put_internal(
            self.store, fid, text, meta_json, kind, now, None if ttl is None else now + ttl))

    def get_internal(self, id: int) -> InternalFact | None:
        """The internal fact with this id, or None."""
        fid = parse_id(id, "id")
        now = self._purge_due()
        row = self.store.reader().execute(
            "SELECT content, metadata, kind, updated_at, expires_at FROM facts WHERE id = ? AND "
            f"kind IS NOT NULL AND {LIVE}", (to_i64(fid), now)).fetchone()
        if row is None:
            return None
        return InternalFact(fid, row[0], json.loads(row[1]), row[2], float(row[3]), row[4])

    def scan_internal(self, kind: str, *, where: dict | None = None,
                      limit: int) -> tuple[list[InternalFact], bool]:
        """Internal facts of ``kind`` matching ``where`` exactly, newest write first, and whether
        more remained beyond ``limit``."""
        kind = validate.text(kind, "kind", limits.MAX_FIELD_NAME_BYTES)
        limit = validate.count(limit, "limit", default=limits.DEFAULT_LIST_LIMIT, low=1,
                               high=limits.MAX_SCAN_INTERNAL)
        cond = mfilters.exact(where, allow_reserved=True, where="where")
        now = self._purge_due()
        rows = self.store.reader().execute(
            f"SELECT id, content, metadata, kind, updated_at, expires_at FROM facts WHERE kind = ? "
            f"AND {LIVE} AND ({cond.sql}) ORDER BY seq DESC LIMIT ?",
            (kind, now, *cond.params, limit + 1)).fetchall()
        facts = [InternalFact(to_u64(i), c, json.loads(m), k, float(u), e)
                 for i, c, m, k, u, e in rows[:limit]]
        return facts, len(rows) > limit

    def delete_internal(self, id: int) -> bool:
        """Delete one internal fact (and its edges); False when there was none."""
        fid = parse_id(id, "id")
        self._purge_due()
        return self.store.writer.submit(writes.delete_internal(fid))


def conn_rows(conn: Any, sql: str, params: tuple[Any, ...]) -> list[tuple[int, str, str]]:
    return [(int(i), c, m) for i, c, m in conn.execute(sql, params)]


def _k(k: object) -> int:
    """k: an integer in [1, MAX_RECALL_LIMIT]; 0, negatives and larger values are refused."""
    return validate.count(k, "k", default=limits.DEFAULT_RECALL_K, low=1,
                          high=limits.MAX_RECALL_LIMIT)


def _pool(pool: object, k: int) -> int:
    """recall_fused's pool: default max(k·8, 64); floored at 1, capped at 1000, never below k."""
    if pool is None:
        value = max(k * limits.FUSED_POOL_FACTOR, limits.MIN_FUSED_POOL)
    else:
        if isinstance(pool, bool) or not isinstance(pool, int):
            raise InvalidInput(f"pool must be an integer, got {type(pool).__name__}")
        value = pool
    return max(min(max(value, 1), limits.MAX_FUSED_POOL), k)


def _dated_context(memories: list[Memory], field: str) -> tuple[str | None, str | None]:
    """``- [YYYY-MM-DD] content`` lines, oldest first, undated last; and the latest date."""
    dated: list[tuple[_dt.date, int, Memory]] = []
    undated: list[Memory] = []
    for n, m in enumerate(memories):
        d = validate.parse_date(m.metadata.get(field))
        if d is None:
            undated.append(m)
        else:
            dated.append((d, n, m))
    if not dated:
        return None, None
    dated.sort(key=lambda t: (t[0], t[1]))
    lines = [f"- [{d.isoformat()}] {m.content}" for d, _, m in dated]
    lines += [f"- {m.content}" for m in undated]
    return "\n".join(lines), max(d for d, _, _ in dated).isoformat()


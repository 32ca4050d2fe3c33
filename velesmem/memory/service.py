"""MemoryService: one method per memory tool, typed results, domain errors.

It speaks the storage protocol (``velesmem.store``) and never SQL. Every method validates its
inputs before touching the store, so a refused call changes nothing. Writes come in pairs:
``submit_remember(...)`` validates and embeds, hands the write to the store and returns a
``Future`` of the result without waiting (the MCP layer awaits it on the event loop, parking no
thread); ``remember(...)`` is the same, waited for. A write never waits for the embedding model:
while the Runtime's embedder is not ready the fact is stored without a vector and the Runtime's
warmer embeds that backlog afterwards (``embed_backlog``); recall meanwhile ranks by text alone
and says so in its ``warnings``. Reads never write: expired facts are
invisible at once and purged by the Runtime's sweeper. Time comes from the injected clock
(TTL expiry, ``_veles_date``).
"""

from __future__ import annotations

import datetime as _dt
import math
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import numpy as np

from velesmem import limits, validate
from velesmem.config import Settings
from velesmem.embed import Embedder
from velesmem.errors import InvalidInput, NotFound
from velesmem.extract.identifiers import identifier_hub_name
from velesmem.ids import fact_id, parse_id, to_i64, to_u64
from velesmem.memory import detail as mdetail
from velesmem.memory import duplicates as mdup
from velesmem.memory import explain as mexplain
from velesmem.memory import filters as mfilters
from velesmem.memory.curate import CurationLane, derive
from velesmem.memory.entities import EntityResult, lookup_entity
from velesmem.memory.graph import Walk, walk
from velesmem.memory.marks import Marks
from velesmem.memory.ranking import Ranked, Ranker
from velesmem.memory.supersede import SUPERSEDES, head, order_versions
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
from velesmem.store import (
    EmbeddingStore,
    ExpiryStore,
    FactStore,
    FactWrite,
    LifecycleStore,
    SearchStore,
    SourceStore,
    StoredFact,
)
from velesmem.store.predicates import All

ARCHIVED_RELATION = "consolidated_into"  # velesmem.consolidate's archive edge
T = TypeVar("T")
R = TypeVar("R")


def then(future: Future[T], fn: Callable[[T], R]) -> Future[R]:
    """A future of ``fn(result)`` (or of ``future``'s error)."""
    out: Future[R] = Future()

    def done(f: Future[T]) -> None:
        try:
            out.set_result(fn(f.result()))
        except BaseException as exc:  # noqa: BLE001 — handed to whoever waits
            out.set_exception(exc)

    future.add_done_callback(done)
    return out


def _extraction_off() -> dict[str, Any]:
    return {"configured": False, "autograph_active": False, "autograph_dropped": 0}


class MemoryStore(FactStore, SourceStore, SearchStore, EmbeddingStore, ExpiryStore, LifecycleStore,
                  Protocol):
    """The store roles the memory service uses: facts and scaffolding, search, the serving space
    and its backlog, the TTL sweep, and closing the store when no Runtime owns it."""


def _always() -> bool:
    return True


def _no_note() -> str | None:
    return None


@dataclass(frozen=True)
class MemoryHooks:
    """What the owner of a MemoryService (the Runtime) tells it, given at construction: the
    service never learns about its owner and nothing is patched into it afterwards."""

    # called with (key, content) once a remember has committed (autograph queues it)
    on_remembered: Callable[[int, str], None] | None = None
    # called once a fact stored without a vector has committed (wakes the backlog warmer)
    on_unembedded: Callable[[], None] | None = None
    # duplicate and supersede checks after the acknowledgement (None: before the write)
    curation: CurationLane | None = None
    # memory_status's "extraction" block
    extraction_status: Callable[[], dict[str, Any]] = _extraction_off
    # whether writes embed their fact now (the embedder has loaded and settled its space)
    embedder_ready: Callable[[], bool] = _always
    # why recall ranks by text alone right now, or None
    vectors_loading: Callable[[], str | None] = _no_note
    # what close() does instead of closing the store (the owner's close: workers, then store)
    close: Callable[[], None] | None = None


class MemoryService:
    """The memory engine over one open store (a context manager). Open one with
    ``velesmem.open(path).memory``; built directly, it uses the store it is given and
    closes it with itself."""

    def __init__(self, store: MemoryStore, embedder: Embedder, clock: Callable[[], float],
                 settings: Settings, pool: Executor | None = None,
                 hooks: MemoryHooks | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._clock = clock
        self._ranker = Ranker(store, embedder, settings.recall_mode, pool)
        self._hooks = hooks if hooks is not None else MemoryHooks()
        self._today: tuple[int, int] = (-1, 0)  # (UTC day number, YYYYMMDD)

    def set_embedder(self, embedder: Embedder) -> None:
        """Rank and embed with ``embedder`` from now on (after a migration's cutover)."""
        self.embedder = embedder
        self._ranker = Ranker(self.store, embedder, self.settings.recall_mode,
                              self._ranker.pool)

    def close(self) -> None:
        """Finish pending writes, save the index and release the lock (idempotent)."""
        if self._hooks.close is not None:
            self._hooks.close()
        else:
            self.store.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> float:
        """The injected clock, epoch seconds."""
        return float(self._clock())

    def today(self, now: float) -> int:
        """The UTC date of ``now`` as YYYYMMDD (worked out once per day: every write asks)."""
        day = math.floor(now / 86_400)
        if day != self._today[0]:
            d = _dt.datetime.fromtimestamp(now, tz=_dt.UTC).date()
            self._today = (day, d.year * 10000 + d.month * 100 + d.day)
        return self._today[1]

    # --- writes ------------------------------------------------------------------------------
    def submit_remember(self, fact: str, links: list[dict[str, Any]] | None = None,
                        metadata: dict[str, Any] | None = None, ttl_seconds: int | None = None, *,
                        author: str | None = None,
                        checked: threading.Event | None = None) -> Future[RememberResult]:
        """Validate and embed a fact, then hand it to the store (see ``remember``); ``author``
        (the caller's token name) is recorded under ``_veles_author``. The future completes
        once the fact is durable; its duplicate and supersede checks may follow in the
        curation lane, and ``checked`` is set once they ran (at once when they ran before the
        write, or the write failed)."""
        content = validate.fact_text(fact)
        fid = fact_id(content)
        pairs = validate.links(links, fid)
        ttl = validate.ttl(ttl_seconds, self.settings.default_ttl)
        now = self.now()
        meta, meta_json = validate.metadata(metadata, today=self.today(now), author=author)
        vector = self.embedder.embed([content])[0] if self._can_embed() else None
        key = to_i64(fid)
        lane = self._hooks.curation
        deferred = vector is not None and lane is not None
        # checked after the acknowledgement in the curation lane, or now with the edges
        # committed with the fact (one transaction, skipped if their target was forgotten
        # meanwhile): never a second write, never a failed remember
        derived = () if deferred else tuple(derive(self.store, self.settings, self.embedder.model,
                                                   key, content, meta, vector, now))
        if checked is not None and not deferred:
            checked.set()
        write = FactWrite(key, content, meta_json, vector, now,
                          None if ttl is None else now + ttl,
                          tuple((to_i64(t), r) for t, r in pairs), derived)
        try:
            future = self.store.remember(write)
        except BaseException:
            if checked is not None:
                checked.set()
            raise
        if deferred and lane is not None:
            def committed(f: Future[int]) -> None:
                if f.exception() is None:
                    if checked is not None:
                        lane.watch(key, checked)  # before the wake: a pass after it sees it
                    lane.wake()
                elif checked is not None:
                    checked.set()
            future.add_done_callback(committed)
        hook = self._hooks.on_remembered
        if hook is not None:
            future.add_done_callback(
                lambda f: None if f.exception() is not None else hook(write.key, content))
        backlog = self._hooks.on_unembedded
        if vector is None and backlog is not None:
            future.add_done_callback(lambda f: None if f.exception() is not None else backlog())
        return then(future, lambda key: RememberResult(to_u64(key)))

    def _can_embed(self) -> bool:
        """Whether a write embeds its fact now: always without a Runtime; with one, once its
        embedder has loaded and settled the serving space (before that the write is stored
        without a vector, never made to wait)."""
        return self._hooks.embedder_ready()

    def _vector_warnings(self) -> list[str]:
        """[why recall ranks by text alone] while the vector side loads, else []."""
        note = self._hooks.vectors_loading()
        return [] if note is None else [note]

    def _rank(self, query: str, depth: int, predicate: All, now: float,
              warnings: list[str]) -> list[Ranked]:
        """Hybrid ranking, or BM25 alone while ``warnings`` says vector search is loading."""
        if warnings:
            return self._ranker.rank_text(query, depth, predicate, now)
        return self._ranker.rank(query, depth, predicate, now)

    def embed_backlog(self, stopped: Callable[[], bool] = lambda: False) -> int:
        """Embed the facts stored without a vector in the serving space (written while the
        model loaded), in key order and in batches; how many got one. Stops early (to be
        called again) when the serving space is not the embedder's, e.g. mid-cutover."""
        done = 0
        after: int | None = None
        while not stopped():
            space = self.store.serving_space()
            embedder = self.embedder
            if space is None or (embedder.model, embedder.dimension) != (
                    space.identity.model, space.identity.dimension):
                return done
            batch = self.store.unembedded(after, limits.BACKLOG_EMBED_BATCH, self.now())
            if not batch:
                return done
            vectors = embedder.embed([content for _, content in batch])
            done += self.store.fill_vectors(
                space.id, [(key, vectors[n]) for n, (key, _) in enumerate(batch)]).result()
            after = batch[-1][0]
        return done

    def remember(self, fact: str, links: list[dict[str, Any]] | None = None,
                 metadata: dict[str, Any] | None = None,
                 ttl_seconds: int | None = None) -> RememberResult:
        """Store a fact (same text → same id, updated in place); links and TTL optional.
        Returns once the fact is durable and checked for duplicates and updates (read your
        writes: a recall next sees its links)."""
        checked = threading.Event()
        result = self.submit_remember(fact, links, metadata, ttl_seconds,
                                      checked=checked).result()
        checked.wait(limits.CURATE_SETTLE_S)
        return result

    def settle(self, timeout: float = limits.CURATE_SETTLE_S) -> bool:
        """Wait until every remembered fact has been checked for duplicates and updates (their
        edges are written after the acknowledgement); False if that took over ``timeout``."""
        lane = self._hooks.curation
        return True if lane is None else lane.wait_idle(timeout)

    def submit_relate(self, from_id: Any, to_id: Any, relation: str) -> Future[RelateResult]:
        src, dst = parse_id(from_id, "from"), parse_id(to_id, "to")
        rel = validate.relation(relation)
        if src == dst:
            raise InvalidInput("from and to are the same memory: an edge needs two ends")
        return then(self.store.relate(to_i64(src), to_i64(dst), rel, self.now()),
                    lambda key: RelateResult(to_u64(key)))

    def relate(self, from_id: Any, to_id: Any, relation: str) -> RelateResult:
        """Create the edge from → to (idempotent: an existing triple answers its id)."""
        return self.submit_relate(from_id, to_id, relation).result()

    def submit_unrelate(self, from_id: Any, to_id: Any,
                        relation: str) -> Future[UnrelateResult]:
        src, dst = parse_id(from_id, "from"), parse_id(to_id, "to")
        rel = validate.relation(relation)
        if src == dst:
            raise InvalidInput("from and to are the same memory: an edge needs two ends")
        return then(self.store.unrelate(to_i64(src), to_i64(dst), rel),
                    lambda n: UnrelateResult(found=n > 0, removed=n))

    def unrelate(self, from_id: Any, to_id: Any, relation: str) -> UnrelateResult:
        """Remove the edge from → to (idempotent: found false when absent)."""
        return self.submit_unrelate(from_id, to_id, relation).result()

    def submit_forget(self, id: Any) -> Future[ForgetResult]:
        fid = parse_id(id, "id")
        return then(self.store.forget(to_i64(fid), self.now()),
                    lambda found: ForgetResult(fid, found))

    def forget(self, id: Any) -> ForgetResult:
        """Delete a fact and its edges (and entity hubs left orphaned); found false if absent."""
        return self.submit_forget(id).result()

    def submit_feedback(self, id: Any, success: bool) -> Future[FeedbackResult]:
        fid = parse_id(id, "id")
        ok = validate.boolean(success, "success")
        return then(self.store.feedback(to_i64(fid), ok, self.now()),
                    lambda confidence: FeedbackResult(fid, confidence))

    def feedback(self, id: Any, success: bool) -> FeedbackResult:
        """Nudge a fact's confidence (+0.1 / −0.05, clamped to [0, 1]) atomically."""
        return self.submit_feedback(id, success).result()

    def confidences(self, ids: Iterable[Any]) -> dict[int, float]:
        """The learned confidence of each live user fact among ``ids``; others are left out."""
        wanted = [to_i64(parse_id(i, "id")) for i in ids]
        found = self.store.confidences(wanted, self.now())
        return {to_u64(i): c for i, c in found.items()}

    def purge_expired(self) -> int:
        """Delete every fact whose expiry has passed (the sweeper's job); how many went."""
        return self.store.purge_expired(self.now()).result()

    # --- recall ------------------------------------------------------------------------------
    def recall(self, query: str, k: int = limits.DEFAULT_RECALL_K,
               filter: dict[str, Any] | None = None, history: bool = False) -> RecallResult:
        """The k best facts for ``query`` (hybrid by default) among those matching ``filter``;
        the newest version of a superseded fact comes first, and with ``history`` every
        version of each chain is listed (newest first)."""
        q = validate.query(query)
        k = _k(k)
        predicate = mfilters.exact(filter)
        every = validate.boolean(history, "history") if history is not None else False
        now = self.now()
        warnings = self._vector_warnings()
        return RecallResult(self._top(q, k, predicate, now, warnings, history=every), warnings)

    def recall_where(self, query: str, filters: list[dict[str, Any]],
                     k: int = limits.DEFAULT_RECALL_K) -> RecallResult:
        """Like recall, constrained by typed predicates ``[{field, op, value}]`` (ANDed; an empty
        list constrains nothing). Internal scaffolding is never returned."""
        q = validate.query(query)
        predicate = mfilters.predicates(filters)
        k = _k(k)
        now = self.now()
        warnings = self._vector_warnings()
        return RecallResult(self._top(q, k, predicate, now, warnings), warnings)

    def recall_fused(self, query: str, k: int = limits.DEFAULT_RECALL_K,
                     filter: dict[str, Any] | None = None, hops: int = limits.DEFAULT_FUSED_HOPS,
                     graph_boost: float = limits.DEFAULT_GRAPH_BOOST, pool: int | None = None,
                     date_field: str | None = None) -> FusedResult:
        """recall plus a graph walk from the top hit whose reach is boosted into the ranking."""
        q = validate.query(query)
        k = _k(k)
        predicate = mfilters.exact(filter)
        hops = validate.capped(hops, "hops", default=limits.DEFAULT_FUSED_HOPS, low=0,
                               cap=limits.MAX_FUSED_HOPS)
        boost = validate.finite(graph_boost, "graph_boost", default=limits.DEFAULT_GRAPH_BOOST,
                                low=0.0)
        depth = _pool(pool, k)
        field = None if date_field is None else validate.field_name(date_field, "date_field")
        now = self.now()
        warnings = self._vector_warnings()
        ranked = self._rank(q, depth, predicate, now, warnings)
        fused: dict[int, float] = {}
        cosine: dict[int, float] = {}
        top = max((r.relevance for r in ranked), default=0.0)
        for r in ranked:
            fused[r.id] = r.relevance / top if top > 0 else 0.0
            cosine[r.id] = r.cosine
        hybrid = dict(fused)
        graph: dict[int, float] = {}
        marks = self._marks()
        seed = self._first_unarchived([r.id for r in ranked], now, marks)
        if seed is not None:
            reach = walk(self.store, seed, hops, now)
            weights = self._reach_weights(reach, predicate, now)
            for node, weight in weights.items():
                graph[node] = boost * weight
                fused[node] = fused.get(node, 0.0) + boost * weight
        order = self._unarchived(sorted(fused, key=lambda i: (-fused[i], to_u64(i))), now,
                                 self._depth(k), marks)
        memories = self._memories([Ranked(i, fused[i], cosine.get(i, 0.0)) for i in order], now,
                                  k=self._depth(k), predicate=predicate, marks=marks)[:k]
        shown = {to_i64(m.id) for m in memories}
        base = {to_u64(i): hybrid.get(i, 0.0) for i in shown}
        walked = {to_u64(i): graph.get(i, 0.0) for i in shown}
        if field is None:
            return FusedResult(memories, warnings=warnings, hybrid=base, graph=walked)
        dated, latest = _dated_context(memories, field)
        return FusedResult(memories, dated, latest, warnings, hybrid=base, graph=walked)

    def _reach_weights(self, reach: Walk, predicate: All, now: float) -> dict[int, float]:
        """Walk-reached user facts (the seed excluded) matching the filter → the highest entity
        idf (ln(n/degree)/ln(n)) of a hub the walk went through to them, else 1.0."""
        reached = [i for i, hop in reach.nodes.items() if hop > 0]
        if not reached:
            return {}
        allowed = self._ranker.allowed(predicate)
        facts = {i for i in self.store.facts(reached, now)
                 if allowed is None or _contains(allowed, i)}
        weights = {i: 1.0 for i in facts}
        if reach.hubs:
            n = self.store.counts(now).facts
            best: dict[int, float] = {}
            for hub, through in reach.hubs.items():
                degree = max(len(self.store.targets(hub)), 1)
                idf = max(math.log(n / degree) / math.log(n), 0.0) if n > 1 else 1.0
                for t in through & facts:
                    best[t] = max(best.get(t, 0.0), idf)
            weights.update(best)
        return weights

    def why(self, decision: str, max_hops: int = limits.DEFAULT_WHY_HOPS,
            filter: dict[str, Any] | None = None) -> WhyResult:
        """The best-matching fact (filter scopes it) and the subgraph reachable from it."""
        q = validate.query(decision, "decision")
        hops = validate.capped(max_hops, "max_hops", default=limits.DEFAULT_WHY_HOPS, low=0,
                               cap=limits.MAX_WHY_HOPS)
        predicate = mfilters.exact(filter)
        now = self.now()
        warnings = self._vector_warnings()
        # the seed is the best fact a consolidation run did not archive (archived facts stay
        # in the subgraph, never first): ranked deeper while archived ones come first
        depth, found_seed, marks = 1, None, self._marks()
        while found_seed is None:
            ranked = self._rank(q, depth, predicate, now, warnings)
            found_seed = self._first_unarchived([r.id for r in ranked], now, marks)
            if len(ranked) < depth or depth >= limits.MAX_RECALL_LIMIT:
                break
            depth = min(depth * 4, limits.MAX_RECALL_LIMIT)
        if found_seed is None:
            return WhyResult([], [], False, warnings)
        # the chain is walked from its newest version (which supersedes the older ones)
        newest = found_seed if found_seed in marks.unlinked else head(
            self.store, found_seed, now, self._admits(predicate))[0]
        reach = walk(self.store, newest, hops, now)
        found = self.store.facts(list(reach.nodes), now)
        order = sorted(reach.nodes, key=lambda i: reach.nodes[i])  # the seed, then by hop
        if self.settings.dedup:
            marks.learn(order)
            groups = dict(mdup.collapse(self.store, order, now, len(order),
                                        unlinked=marks.unlinked))
        else:
            groups = {i: [] for i in order}
        rep = {i: i for i in order}
        for keep, others in groups.items():
            rep.update((o, keep) for o in others)
        nodes = [WhyNode(to_u64(i), found[i].content if i in found else "", reach.nodes[i],
                         tuple(sorted(to_u64(d) for d in groups[i])))
                 for i in order if i in groups]
        edges: list[WhyEdge] = []
        seen: set[tuple[int, int, str]] = set()
        for s, d, rel in reach.edges:
            triple = (rep.get(s, s), rep.get(d, d), rel)
            if triple == (s, d, rel):
                edges.append(WhyEdge(to_u64(s), to_u64(d), rel))
            elif triple[0] != triple[1] and triple not in seen:  # folded onto representatives
                seen.add(triple)
                edges.append(WhyEdge(to_u64(triple[0]), to_u64(triple[1]), rel))
        return WhyResult(nodes, edges, reach.truncated, warnings)

    def entity(self, name: str) -> EntityResult:
        """What the graph knows about one entity: its attributes, the typed relations leaving
        it and those arriving at it (each direction bounded, cuts reported)."""
        canonical = validate.entity_name(name)
        found = lookup_entity(self.store, canonical, self.now())
        alias = None if found.found else identifier_hub_name(name)
        if alias is not None and alias != canonical:  # ADR-014 is filed under its hub, adr-14
            return lookup_entity(self.store, alias, self.now())
        return found

    def _admits(self, predicate: All) -> Callable[[int], bool]:
        """Whether a key matches ``predicate`` (for versions a query did not find itself);
        the matching keys are read once, on the first question, when there is a filter."""
        if predicate.is_true:
            return lambda key: True
        cache: list[np.ndarray] = []

        def admits(key: int) -> bool:
            if not cache:
                allowed = self._ranker.allowed(predicate)
                cache.append(np.zeros(0, np.int64) if allowed is None else allowed)
            return _contains(cache[0], key)
        return admits

    def _memories(self, ranked: list[Ranked], now: float, *, k: int, predicate: All,
                  history: bool = False, marks: Marks | None = None) -> list[Memory]:
        """The first ``k`` results, each chain's newest version before its older ones (a
        version the query did not find itself carries score 0: nothing was compared); only
        versions matching ``predicate`` are added. The ranked keys touching no version,
        duplicate or archive edge (asked in one query, or known to ``marks``) read no edge."""
        if not ranked:
            return []
        marks = self._marks() if marks is None else marks
        marks.learn(r.id for r in ranked)
        cosine = {r.id: float(r.cosine) for r in ranked}
        if not history and all(r.id in marks.unlinked for r in ranked[:k]):
            # the usual case, no edge to walk: each is its own newest version, its own group
            # and not archived (what the general path below concludes for these keys)
            keys = [r.id for r in ranked[:k]]
            rows = self.store.facts(keys, now)
            return [Memory(to_u64(key), cosine[key], rows[key].content,
                           validate.visible_metadata(rows[key].metadata), None)
                    for key in keys if key in rows]
        versions = order_versions(self.store, [r.id for r in ranked], now, history=history,
                                  admit=self._admits(predicate), unlinked=marks.unlinked)
        versions = versions if history else versions[:k]
        rows = self.store.facts([v.key for v in versions], now)  # at most 1,000 (the k/pool caps)
        out = []
        for v in versions:
            fact = rows.get(v.key)
            if fact is not None and (history or not self._archived(v.key, now, marks)):
                later = None if v.superseded_by is None else to_u64(v.superseded_by)
                out.append(Memory(to_u64(v.key), cosine.get(v.key, 0.0), fact.content,
                                  validate.visible_metadata(fact.metadata), later))
        if self.settings.dedup and not history:
            out = self._collapse(out, now, marks)
        return out

    def _marks(self) -> Marks:
        """A fresh record of which keys touch a version, duplicate or archive edge."""
        return Marks(self.store, (SUPERSEDES, mdup.RELATION, ARCHIVED_RELATION))

    def _depth(self, k: int) -> int:
        """How many to fuse for k results: more when duplicate groups collapse (so k results
        are k different things), capped like k."""
        if not self.settings.dedup:
            return k
        return min(k * 2 + limits.DEDUP_EXTRA_DEPTH, limits.MAX_RECALL_LIMIT)

    def _collapse(self, memories: list[Memory], now: float, marks: Marks) -> list[Memory]:
        """One memory per duplicate group (the first), the others' ids in ``duplicates``."""
        kept = mdup.collapse(self.store, [to_i64(m.id) for m in memories], now, len(memories),
                             unlinked=marks.unlinked)
        others = dict(kept)
        out = []
        for m in memories:
            key = to_i64(m.id)
            if key in others:  # a group of one keeps its memory as it is
                out.append(replace(m, duplicates=tuple(sorted(to_u64(d) for d in others[key])))
                           if others[key] else m)
        return out

    def _top(self, query: str, k: int, predicate: All, now: float, warnings: list[str],
             history: bool = False) -> list[Memory]:
        """The k best visible facts: ranked deeper (doubling, up to the recall cap) while
        archived facts took places among the first k. With ``history``, each found fact's
        whole version chain (archived versions included) follows its newest."""
        depth, marks = k, self._marks()
        while True:
            ranked = self._rank(query, depth, predicate, now, warnings)
            memories = self._memories(ranked, now, k=depth, predicate=predicate,
                                      history=history, marks=marks)
            if len(memories) >= k or len(ranked) < depth or depth >= limits.MAX_RECALL_LIMIT:
                return memories if history else memories[:k]
            depth = min(depth * 2, limits.MAX_RECALL_LIMIT)

    def _first_unarchived(self, keys: list[int], now: float, marks: Marks) -> int | None:
        """The first of ``keys`` no consolidation run archived, or None."""
        marks.learn(keys)
        return next((key for key in keys if not self._archived(key, now, marks)), None)

    def _unarchived(self, keys: list[int], now: float, n: int, marks: Marks) -> list[int]:
        """The first ``n`` of ``keys`` no consolidation run archived (checked in order)."""
        marks.learn(keys)
        out: list[int] = []
        for key in keys:
            if len(out) >= n:
                break
            if not self._archived(key, now, marks):
                out.append(key)
        return out

    def _archived(self, key: int, now: float, marks: Marks | None = None) -> bool:
        """Whether a consolidation run archived ``key`` (an edge ``consolidated_into`` leaves
        it): archived facts leave recall but stay in export, list_memories, why and by id.
        A key ``marks`` knows to touch no such edge reads none."""
        if marks is not None and key in marks.unlinked:
            return False
        return any(rel == ARCHIVED_RELATION
                   for _, rel in self.store.out_edges(key, now, limits.MAX_ARCHIVE_EDGE_SCAN))

    # --- audit -------------------------------------------------------------------------------
    def list_memories(self, cursor: Any = None, limit: int = limits.DEFAULT_LIST_LIMIT,
                      filter: dict[str, Any] | None = None,
                      include_internal: bool = False,
                      include_archived: bool = False, *,
                      where: list[dict[str, Any]] | None = None) -> ListResult:
        """A page of facts in ascending u64 id order after ``cursor`` (next_cursor None: done);
        facts archived by a consolidation run only with ``include_archived``; ``where`` adds
        recall_where's typed predicates (the dashboard's date range)."""
        after = None if cursor is None else parse_id(cursor, "cursor")
        if limit is None:
            limit = limits.DEFAULT_LIST_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInput(f"limit must be an integer, got {type(limit).__name__}")
        limit = min(max(limit, 1), limits.MAX_LIST_LIMIT)
        internal = validate.boolean(include_internal, "include_internal")
        archived = validate.boolean(include_archived, "include_archived")
        predicate = mfilters.exact(filter, allow_reserved=internal)
        if where:
            predicate = predicate & mfilters.predicates(where)
        rows = self.store.page(after, limit + 1, predicate, include_internal=internal,
                               now=self.now())
        now = self.now()
        more = len(rows) > limit
        page = rows[:limit]
        marks = Marks(self.store, (ARCHIVED_RELATION,))
        if not archived:  # one query tells which of the page's facts may be archived
            marks.learn(f.key for f in page if f.kind is None)
        memories = [ListedMemory(to_u64(f.key), f.content,
                                 f.metadata if internal else validate.visible_metadata(f.metadata))
                    for f in page if archived or f.kind is not None
                    or not self._archived(f.key, now, marks)]
        next_cursor = str(to_u64(page[-1].key)) if more and page else None
        return ListResult(memories, next_cursor)

    # --- the dashboard -----------------------------------------------------------------------
    def fact(self, id: Any) -> mdetail.FactDetail:
        """One live user fact with its links, duplicate group and supersede chain (bounded
        reads); NotFound when no live user fact has the id."""
        fid = parse_id(id, "id")
        found = mdetail.fact_detail(self.store, to_i64(fid), self.now())
        if found is None:
            raise NotFound(f"no memory has id {fid}: it was forgotten, expired or never stored")
        return found

    def explain(self, query: str, ids: Iterable[Any],
                filters: list[dict[str, Any]] | None = None) -> dict[int, mexplain.Signals]:
        """u64 id → its score broken down per signal for ``query`` (the ranking recall and
        recall_where use, under the same typed ``filters``), for the facts among ``ids``."""
        q = validate.query(query)
        predicate = mfilters.predicates(filters or [])
        keys = [to_i64(parse_id(i, "id")) for i in ids]
        now = self.now()
        found = mexplain.explain(self.store, self._ranker, q, keys, predicate, now,
                                 text_only=bool(self._vector_warnings()))
        return {to_u64(k): s for k, s in found.items()}

    def states(self, ids: Iterable[Any]) -> tuple[set[int], set[int]]:
        """(archived, superseded): the u64 ids among ``ids`` a consolidation run archived, and
        those a newer version supersedes (bounded edge reads per id)."""
        keys = [to_i64(parse_id(i, "id")) for i in ids]
        now = self.now()
        return ({to_u64(k) for k in mdetail.archived_keys(self.store, keys, now)},
                {to_u64(k) for k in mdetail.superseded_keys(self.store, keys, now)})

    def memory_status(self) -> StatusResult:
        """What embeds (running), what filled the store (provenance), extraction, corpus size
        (with the facts imported from each source, when there are any)."""
        recorded = self.store.provenance()
        counts = self.store.counts(self.now())
        memory: dict[str, Any] = {"facts": counts.facts, "edges": counts.edges}
        imported = self.store.count_by(validate.IMPORTED_FROM_KEY, self.now())
        if imported:  # facts per source of ``import --from``, once something was imported
            memory["imported"] = imported
        lane = self._hooks.curation
        waiting = 0 if lane is None else lane.backlog()
        if waiting:  # remembered facts whose duplicate and update checks have not run yet
            memory["uncurated"] = waiting
        return StatusResult(
            embedder={"model": self.embedder.model, "dimension": self._embedder_dimension(),
                      "semantic": bool(self.embedder.semantic)},
            provenance={"recorded": recorded is not None,
                        "model": recorded.model if recorded else None,
                        "dimension": recorded.dimension if recorded else None},
            extraction=self._hooks.extraction_status(),
            memory=memory,
        )

    def _embedder_dimension(self) -> int | None:
        """The running embedder's dimension without waiting for it: a remote one learns it from
        its probe, so while that is pending the serving space's (same model) answers, else
        None."""
        embedder = self.embedder
        if self._can_embed() or getattr(embedder, "ready", True):
            return embedder.dimension
        space = self.store.serving_space()
        if space is not None and space.identity.model == embedder.model:
            return space.identity.dimension
        return None

    # --- internal scaffolding ----------------------------------------------------------------
    def submit_put_internal(self, id: int, content: str, metadata: dict[str, Any], *, kind: str,
                            ttl_seconds: int | None = None) -> Future[int]:
        fid = parse_id(id, "id")
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
        ttl = validate.ttl(ttl_seconds, None)
        now = self.now()
        return then(self.store.put_internal(to_i64(fid), text, meta_json, kind, now,
                                            None if ttl is None else now + ttl),
                    lambda key: to_u64(key))

    def put_internal(self, id: int, content: str, metadata: dict[str, Any], *, kind: str,
                     ttl_seconds: int | None = None) -> int:
        """Upsert an internal fact (no embedding; invisible to recall and default listing),
        expiring after ``ttl_seconds`` when given."""
        return self.submit_put_internal(id, content, metadata, kind=kind,
                                        ttl_seconds=ttl_seconds).result()

    def get_internal(self, id: int) -> InternalFact | None:
        """The live internal fact with this id, or None."""
        fid = parse_id(id, "id")
        fact = self.store.get_internal(to_i64(fid), self.now())
        return None if fact is None else _internal(fact)

    def scan_internal(self, kind: str, *, where: dict[str, Any] | None = None,
                      limit: int) -> tuple[list[InternalFact], bool]:
        """Live internal facts of ``kind`` matching ``where`` exactly, newest write first, and
        whether more remained beyond ``limit``."""
        kind = validate.text(kind, "kind", limits.MAX_FIELD_NAME_BYTES)
        limit = validate.count(limit, "limit", default=limits.DEFAULT_LIST_LIMIT, low=1,
                               high=limits.MAX_SCAN_INTERNAL)
        predicate = mfilters.exact(where, allow_reserved=True, where="where")
        rows = self.store.scan_internal(kind, predicate, limit + 1, self.now())
        return [_internal(f) for f in rows[:limit]], len(rows) > limit

    def delete_internal(self, id: int) -> bool:
        """Delete one internal fact (and its edges); False when there was none."""
        fid = parse_id(id, "id")
        return self.store.delete_internal(to_i64(fid)).result()


def _internal(fact: StoredFact) -> InternalFact:
    return InternalFact(to_u64(fact.key), fact.content, fact.metadata, fact.kind or "",
                        fact.updated_at, fact.expires_at)


def _contains(sorted_keys: np.ndarray, key: int) -> bool:
    pos = int(np.searchsorted(sorted_keys, key))
    return pos < len(sorted_keys) and int(sorted_keys[pos]) == key


def _k(k: object) -> int:
    """k: an integer ≥ 1, capped at MAX_RECALL_LIMIT; 0 and negatives are refused."""
    return validate.capped(k, "k", default=limits.DEFAULT_RECALL_K, low=1,
                           cap=limits.MAX_RECALL_LIMIT)


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


__all__ = ["MemoryService", "then"]

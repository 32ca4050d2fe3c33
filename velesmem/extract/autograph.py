"""Autograph: every remembered fact is linked into the entity graph in the background.

``remember`` acknowledges first; then ``offer`` queues the fact (a bounded queue: when it is
full the fact is dropped and counted, never waited for). The Runtime's worker takes facts in
order and links each one: in ``identifiers`` mode to a hub per identifier it mentions (ticket
keys, PR/issue numbers, commits, URLs, paths, symbols, handles, named versions — see
``identifiers``) and per entity name (multiword proper names, known technologies — see
``names``), leaving out identifiers so common that their idf is below the floor; in
``extractor`` mode also to the topics a remote model reads in it. Two facts that mention the
same identifier then meet through its hub, so ``why`` walks from a decision to the ticket its PR
fixed with nobody calling ``relate``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from velesmem import limits
from velesmem.errors import VelesmemError
from velesmem.extract import AUTOGRAPH_EXTRACTOR, AUTOGRAPH_OFF, Extractor
from velesmem.extract.graph import hub_key, identifier_graph, topics_graph
from velesmem.extract.identifiers import Identifier, find_identifiers, hub_worthy
from velesmem.extract.names import find_names
from velesmem.store import FactStore, GraphWrite, HubWrite

TOTAL_REFRESH = 256  # facts linked between two re-counts of the store's facts
BATCH = 32  # queued facts linked by one store write
log = logging.getLogger(__name__)


def find_entities(content: str) -> list[Identifier]:
    """A fact's identifiers, then the entity names (people, technologies) not already among them."""
    found = find_identifiers(content)
    seen = {i.canonical for i in found}
    return found + [n for n in find_names(content) if n.canonical not in seen]


class Autograph:
    """The queue and the linking of one fact; the Runtime runs ``run`` in its thread."""

    def __init__(self, store: FactStore, mode: str, clock: Callable[[], float],
                 extractor: Extractor | None = None,
                 maxsize: int = limits.AUTOGRAPH_QUEUE_MAX) -> None:
        self.store = store
        self.mode = mode
        self.extractor = extractor
        self._clock = clock
        self._queue: queue.Queue[tuple[int, str] | None] = queue.Queue(maxsize)
        self.dropped = 0
        self.linked = 0
        self._total = 0
        self._since_count = TOTAL_REFRESH
        self._idle = threading.Condition()
        self._pending = 0  # facts queued and not linked yet (a fact taken off the queue included)
        self._degree: dict[int, int] = {}  # hub key → facts it mentions (read once, then kept)

    @property
    def active(self) -> bool:
        return self.mode != AUTOGRAPH_OFF

    def offer(self, key: int, content: str) -> None:
        """Queue a just-acknowledged fact (dropped and counted when the queue is full)."""
        if not self.active:
            return
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait((key, content))
        except queue.Full:
            self.dropped += 1
            self._done(1)

    def stop(self) -> None:
        try:
            self._queue.put_nowait(None)
        except queue.Full:  # the worker checks the stop event between facts too
            pass

    def run(self, stop: threading.Event) -> None:
        """Link queued facts until ``stop`` (or a None in the queue), a batch at a time: the
        first fact waits ``AUTOGRAPH_LINGER_SECONDS`` for those that follow it, so a steady
        stream of remembers wakes this thread a few times a second, not once per fact, and
        what queued meanwhile is linked in one store write."""
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=0.5)
            except queue.Empty:
                with self._idle:
                    self._idle.notify_all()
                continue
            if item is None:
                return
            if self._queue.qsize() < BATCH - 1:
                stop.wait(limits.AUTOGRAPH_LINGER_SECONDS)
            batch = [item]
            while len(batch) < BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop.set()
                    break
                batch.append(nxt)
            try:
                self.link_many(batch)
            except VelesmemError as exc:
                if stop.is_set():
                    return
                self._degree.clear()  # the write failed: counts may be ahead of the store
                log.warning("autograph could not link %d facts: %s", len(batch), exc.message)
            except Exception:
                self._degree.clear()
                log.exception("autograph could not link %d facts", len(batch))
            finally:
                self._done(len(batch))

    def _done(self, facts: int) -> None:
        """``facts`` offered facts were linked (or dropped): wake ``wait_idle`` at none left."""
        with self._idle:
            self._pending -= facts
            if not self._pending:
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every queued fact is linked (tests, the demo); False on timeout. It counts
        the facts offered and not linked yet: the queue alone is empty while the worker holds
        the facts it took."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def link(self, key: int, content: str) -> None:
        """Link one stored fact into the graph (a fact forgotten meanwhile gets no edges)."""
        self.link_many([(key, content)])

    def link_many(self, facts: list[tuple[int, str]]) -> None:
        """Link stored facts into the graph with one store write."""
        now = float(self._clock())
        hubs: dict[int, HubWrite] = {}
        edges: list[tuple[int, int, str]] = []
        for key, content in facts:
            graphs: list[GraphWrite] = []
            found = find_entities(content)
            if found:
                df = {i.canonical: self._degree_of(hub_key(i.canonical)) for i in found}
                worthy = hub_worthy(found, df, self._store_size(now))
                if worthy:
                    graphs.append(identifier_graph(key, worthy, now))
                    for i in worthy:
                        h = hub_key(i.canonical)
                        self._degree[h] = self._degree.get(h, 0) + 1
            if self.mode == AUTOGRAPH_EXTRACTOR and self.extractor is not None:
                graphs.append(topics_graph(key, self.extractor.extract(content), now))
            for graph in graphs:
                for hub in graph.hubs:
                    hubs.setdefault(hub.key, hub)
                edges.extend(graph.edges)
        if hubs or edges:
            self.store.write_graph(GraphWrite(now, (), tuple(hubs.values()), tuple(edges)),
                                   background=True).result()
        self.linked += len(facts)

    def _degree_of(self, hub: int) -> int:
        known = self._degree.get(hub)
        if known is None:
            known = self._degree[hub] = len(self.store.targets(hub))
        return known

    def _store_size(self, now: float) -> int:
        """The store's live fact count, re-counted every TOTAL_REFRESH facts and estimated in
        between (each linked fact is a new one, at most)."""
        if self._since_count >= TOTAL_REFRESH:
            self._total = self.store.counts(now).facts
            self._since_count = 0
        self._since_count += 1
        return max(self._total + self._since_count - 1, 1)

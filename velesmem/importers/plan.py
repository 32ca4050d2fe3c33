"""From a reader's records to the facts and edges of one import, checked, before the store.

Every record is checked here, without the store: a fact's text as ``remember`` checks it (its
id is the hash of that text, so the same text from two items is one fact, counted once), its
metadata (the source's own keys; a reserved key ``k`` kept as ``source_k``; ``imported_from``
naming the source; ``_veles_date`` from its creation time, else the import's day) and its size;
an entity's name as the graph keys it (one hub per name); a link's ends and label. An item
that cannot be kept is skipped with its reason; nothing here raises for a well-formed input.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velesmem import limits, validate
from velesmem.errors import InvalidInput
from velesmem.ids import entity_hub_id, fact_id
from velesmem.importers.records import CorruptInput, Entity, Fact, Link, Record, Skipped
from velesmem.memory.import_file import EdgeLine, FactLine
from velesmem.store import ENTITY_HUB_KIND, HUB_NAME_KEY, HUB_SOURCE_KEY

SOURCE_KEY = validate.IMPORTED_FROM_KEY  # metadata key naming the source of an imported fact
RENAMED_PREFIX = "source_"  # a source's own key that velesmem reserves is kept under this prefix
ABOUT, MENTIONS = "about", "mentions"
HUB_SOURCE = "entity"
PROGRESS_EVERY = 1000  # records between two progress reports while reading


@dataclass
class Plan:
    """One import, checked: distinct facts (user facts, then entity hubs' first sight order
    kept) and edges, and what was left out."""

    source: str
    facts: list[FactLine] = field(default_factory=list)
    edges: list[EdgeLine] = field(default_factory=list)
    where: dict[int, str] = field(default_factory=dict)  # fact id -> where it was first read
    skipped: list[Skipped] = field(default_factory=list)
    repeated: int = 0  # items whose text (or entity) an earlier item already gave
    read: int = 0  # records read

    @property
    def user_facts(self) -> int:
        return sum(1 for f in self.facts if f.kind is None)


def date_of(seconds: float) -> int:
    """The YYYYMMDD (UTC) day of Unix time ``seconds``, as ``_veles_date`` holds it."""
    d = _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC).date()
    return d.year * 10000 + d.month * 100 + d.day


def _metadata(given: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The source's keys (a reserved one renamed) and then ``extra``, which wins."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        if not isinstance(key, str):
            key = str(key)
        if validate.is_reserved(key) or key in extra:
            key = RENAMED_PREFIX + key
        out[key] = value
    out.update(extra)
    return out


def _encoded(meta: dict[str, Any], where: str, cap: int) -> str | None:
    """Canonical JSON of ``meta``; None when over ``cap`` bytes."""
    try:
        encoded = validate.dumps(meta)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CorruptInput(where, f"metadata is not JSON: {exc}") from None
    if len(encoded.encode("utf-8", "surrogatepass")) > cap:
        return None
    return encoded


def _time(value: float | None, where: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CorruptInput(where, f"{name} is not a time")
    return float(value)


class _Builder:
    def __init__(self, source: str, now: float) -> None:
        self.plan = Plan(source)
        self.now = now
        self.today = date_of(now)
        self.ids: dict[str, int] = {}  # record key -> fact or hub id
        self.hubs: set[int] = set()
        self.facts: dict[int, FactLine] = {}
        self.links: list[Link] = []

    def skip(self, where: str, reason: str) -> None:
        self.plan.skipped.append(Skipped(where, reason))

    def add(self, line: FactLine, where: str) -> None:
        self.facts[line.id] = line
        self.plan.facts.append(line)
        self.plan.where[line.id] = where

    def fact(self, r: Fact) -> None:
        try:
            text = validate.fact_text(r.text)
        except InvalidInput as exc:
            self.skip(r.where, exc.message)
            return
        fid = fact_id(text)
        self.ids[r.key] = fid
        if fid in self.facts:
            self.plan.repeated += 1
            return
        created = _time(r.created_at, r.where, "created_at")
        updated = _time(r.updated_at, r.where, "updated_at")
        extra: dict[str, Any] = {SOURCE_KEY: self.plan.source}
        meta = _metadata(r.metadata, extra)
        meta.setdefault(validate.DATE_KEY, self.today if created is None else date_of(created))
        encoded = _encoded(meta, r.where, limits.MAX_METADATA_BYTES)
        if encoded is None:
            del self.ids[r.key]
            self.skip(r.where, f"its metadata is over the {limits.MAX_METADATA_BYTES:,}-byte "
                               "cap (MAX_METADATA_BYTES)")
            return
        created = self.now if created is None else created
        updated = created if updated is None else max(updated, created)
        self.add(FactLine(len(self.plan.facts), fid, text, encoded, None,
                          limits.DEFAULT_CONFIDENCE, 0, 0, created, updated, None), r.where)

    def entity(self, r: Entity) -> None:
        try:
            name = validate.entity_name(r.name)
        except InvalidInput as exc:
            self.skip(r.where, f"entity {exc.message}")
            return
        hub = entity_hub_id(name)
        self.ids[r.key] = hub
        self.hubs.add(hub)
        if hub in self.facts:
            self.plan.repeated += 1
            return
        meta = _metadata(r.attributes, {SOURCE_KEY: self.plan.source})
        meta.update({HUB_NAME_KEY: name, HUB_SOURCE_KEY: HUB_SOURCE})
        encoded = _encoded(meta, r.where, limits.MAX_METADATA_BYTES)
        if encoded is None:
            encoded = validate.dumps({HUB_NAME_KEY: name, HUB_SOURCE_KEY: HUB_SOURCE,
                                      SOURCE_KEY: self.plan.source})
        self.add(FactLine(len(self.plan.facts), hub, f"Entity: {name}", encoded, ENTITY_HUB_KIND,
                          limits.DEFAULT_CONFIDENCE, 0, 0, self.now, self.now, None), r.where)

    def edges(self) -> None:
        seen: set[tuple[int, int, str]] = set()
        for link in self.links:
            ends = [self.ids.get(link.src), self.ids.get(link.dst)]
            missing = [k for k, i in zip((link.src, link.dst), ends) if i is None]
            if missing:
                self.skip(link.where, f"link {link.relation!r} to {missing[0]!r}, which the "
                                      "input does not hold")
                continue
            src, dst = ends[0], ends[1]
            assert src is not None and dst is not None
            try:
                relation = validate.relation(link.relation)
            except InvalidInput as exc:
                self.skip(link.where, exc.message)
                continue
            if src == dst:
                self.plan.repeated += 1  # two items of one text (or entity) linked together
                continue
            pairs = [(src, dst, relation)]
            if relation == ABOUT and src not in self.hubs and dst in self.hubs:
                pairs.append((dst, src, MENTIONS))
            for triple in pairs:
                if triple not in seen:
                    seen.add(triple)
                    self.plan.edges.append(EdgeLine(len(self.plan.edges), *triple))


def plan(records: Iterable[Record], source: str, now: float,
         step: Callable[[int], None] = lambda read: None) -> Plan:
    """Check every record of one import (see the module docstring); ``step(read)`` hears
    progress while the records stream. CorruptInput from the reader passes through."""
    b = _Builder(source, now)
    for n, record in enumerate(records, 1):
        if n % PROGRESS_EVERY == 0:
            step(n)
        b.plan.read = n
        if isinstance(record, Fact):
            b.fact(record)
        elif isinstance(record, Entity):
            b.entity(record)
        elif isinstance(record, Link):
            b.links.append(record)
        else:
            b.plan.skipped.append(record)
    b.edges()
    return b.plan


def plan_path(source: str, path: Path, now: float,
              step: Callable[[int], None] = lambda read: None) -> Plan:
    """``plan`` over what ``source``'s reader yields for ``path`` (a file or a folder)."""
    from velesmem.importers import reader

    read = reader(source)
    if not path.exists():
        raise InvalidInput(f"{path} does not exist; nothing was imported")
    return plan(read(path), source, now, step)

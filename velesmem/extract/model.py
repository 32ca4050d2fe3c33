"""What an extractor returns: facts with topics, relations between entities, entity attributes.

Everything here is already canonical and validated, so the graph writer can trust it: entity
names, topics and predicates are trimmed and lowercased (``canonical_name``), attribute keys are
trimmed, and ``to_json``/``from_json`` round-trip exactly, because the extraction is persisted
before the first memory write and a restart must replay the very same facts and edges.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from velesmem import limits
from velesmem.errors import InvalidInput

JsonValue = Any  # None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]

FORMAT_VERSION = 1  # of to_json's document; from_json refuses any other
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RESERVED_KEY_PREFIX = "_veles_"


def canonical_name(name: str) -> str:
    """An entity's canonical name: trimmed and lowercased (its hub id hashes this form)."""
    return name.strip().lower()


def _utf8_size(value: str, what: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode (lone surrogate)") from None


def _label(value: str, what: str, max_bytes: int) -> str:
    """A trimmed, lowercased name or predicate: non-empty, capped, no ASCII control character."""
    out = canonical_name(value)
    if not out:
        raise InvalidInput(f"{what} is empty")
    size = _utf8_size(out, what)
    if size > max_bytes:
        raise InvalidInput(f"{what} is {size} bytes, over the {max_bytes}-byte cap")
    if _CONTROL.search(out):
        raise InvalidInput(f"{what} contains an ASCII control character")
    return out


def entity_name(value: str, what: str = "entity name") -> str:
    """Validate and canonicalise a topic, subject, object or attribute entity."""
    return _label(value, what, limits.MAX_ENTITY_NAME_BYTES)


def predicate(value: str) -> str:
    """Validate and canonicalise an edge label (the rules of ``relate``'s relation)."""
    return _label(value, "predicate", limits.MAX_PREDICATE_BYTES)


def attr_key(value: str) -> str:
    """An attribute key: trimmed (case kept), non-empty, capped, not a reserved metadata key."""
    out = value.strip()
    if not out:
        raise InvalidInput("attribute key is empty")
    size = _utf8_size(out, "attribute key")
    if size > limits.MAX_ATTR_KEY_BYTES:
        raise InvalidInput(f"attribute key is {size} bytes, over the "
                           f"{limits.MAX_ATTR_KEY_BYTES}-byte cap")
    if _CONTROL.search(out):
        raise InvalidInput("attribute key contains an ASCII control character")
    if out == "content" or out.startswith(_RESERVED_KEY_PREFIX):
        raise InvalidInput(f"attribute key {out!r} is reserved (content and _veles_* keys)")
    return out


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def parse_json_value(raw: str) -> JsonValue:
    """Strict JSON (no NaN/Infinity), capped at MAX_ATTR_VALUE_BYTES; InvalidInput otherwise."""
    size = _utf8_size(raw, "attribute value")
    if size > limits.MAX_ATTR_VALUE_BYTES:
        raise InvalidInput(f"attribute value is {size} bytes, over the "
                           f"{limits.MAX_ATTR_VALUE_BYTES}-byte cap")
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "too deep"
        raise InvalidInput(f"attribute value is not JSON ({reason}); quote strings: "
                           '"like this"') from None
    dumps_value(value)  # lone surrogates inside strings are refused here
    return value


def dumps_value(value: JsonValue) -> str:
    """Canonical JSON of an attribute value (sorted keys, compact), as stored and compared."""
    try:
        out = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                         allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"attribute value is not serialisable JSON: {exc}") from None
    _utf8_size(out, "attribute value")
    return out


def fact_text(value: str) -> str:
    """A fact's trimmed text; non-empty. Over MAX_EMBEDDABLE_TEXT_BYTES is kept (and counted as
    skipped_over_cap when stored), never truncated."""
    out = value.strip()
    if not out:
        raise InvalidInput("fact text is empty")
    _utf8_size(out, "fact text")
    return out


@dataclass(frozen=True)
class Fact:
    """One atomic fact and the topics (entity names) it is about."""

    text: str
    topics: tuple[str, ...] = ()

    @property
    def over_cap(self) -> bool:
        """True when the fact is too long to embed; it is skipped, never truncated."""
        return len(self.text.encode("utf-8")) > limits.MAX_EMBEDDABLE_TEXT_BYTES


@dataclass(frozen=True)
class Relation:
    """A typed edge between two entities: subject --predicate--> object."""

    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class Attribute:
    """``key: value`` merged into an entity's metadata; ``value`` is any JSON value."""

    entity: str
    key: str
    value: JsonValue


def make_fact(text: str, topics: Iterable[str] = ()) -> Fact:
    """A validated fact: text trimmed, topics canonical, duplicates dropped, order kept."""
    names = _dedup(entity_name(t, "topic") for t in topics)
    if len(names) > limits.MAX_TOPICS_PER_FACT:
        raise InvalidInput(f"a fact has {len(names)} topics, over the "
                           f"{limits.MAX_TOPICS_PER_FACT}-topic cap")
    return Fact(fact_text(text), names)


def make_relation(subject: str, pred: str, obj: str) -> Relation:
    """A validated relation; its two ends must differ (as relate requires)."""
    rel = Relation(entity_name(subject, "subject"), predicate(pred), entity_name(obj, "object"))
    if rel.subject == rel.object:
        raise InvalidInput(f"subject and object are the same entity ({rel.subject!r})")
    return rel


def make_attribute(entity: str, key: str, value: JsonValue) -> Attribute:
    """A validated attribute; ``value`` must be JSON-serialisable within the cap."""
    encoded = dumps_value(value)
    if len(encoded.encode("utf-8")) > limits.MAX_ATTR_VALUE_BYTES:
        raise InvalidInput(f"attribute value is over the {limits.MAX_ATTR_VALUE_BYTES}-byte cap")
    return Attribute(entity_name(entity, "entity"), attr_key(key), json.loads(encoded))


def _dedup(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class Extraction:
    """An extractor's whole output, normalised: facts in order of first appearance (a repeated
    fact merges its topics into the first), relations once each, and one attribute per
    (entity, key) holding the last value given (attributes merge, later wins)."""

    facts: tuple[Fact, ...] = ()
    relations: tuple[Relation, ...] = ()
    attributes: tuple[Attribute, ...] = ()

    @classmethod
    def build(cls, facts: Iterable[Fact] = (), relations: Iterable[Relation] = (),
              attributes: Iterable[Attribute] = ()) -> Extraction:
        """Normalise already-validated parts into one extraction (see the class docstring)."""
        merged: dict[str, list[str]] = {}
        for f in facts:
            merged.setdefault(f.text, []).extend(f.topics)
        out_facts = []
        for text, topics in merged.items():
            names = _dedup(topics)
            if len(names) > limits.MAX_TOPICS_PER_FACT:
                raise InvalidInput(f"fact {text[:60]!r} has {len(names)} topics, over the "
                                   f"{limits.MAX_TOPICS_PER_FACT}-topic cap")
            out_facts.append(Fact(text, names))
        attrs: dict[tuple[str, str], Attribute] = {}
        for a in attributes:
            attrs[(a.entity, a.key)] = a
        return cls(tuple(out_facts), tuple(dict.fromkeys(relations)), tuple(attrs.values()))

    @classmethod
    def merge(cls, parts: Iterable[Extraction]) -> Extraction:
        """One extraction from several (the slices of a long passage), in order."""
        parts = list(parts)
        return cls.build([f for p in parts for f in p.facts],
                         [r for p in parts for r in p.relations],
                         [a for p in parts for a in p.attributes])

    @property
    def entities(self) -> tuple[str, ...]:
        """Every entity named anywhere (topics, relation ends, attribute owners), first seen
        first: the hubs the graph writer needs."""
        names: list[str] = []
        for f in self.facts:
            names.extend(f.topics)
        for r in self.relations:
            names += [r.subject, r.object]
        names.extend(a.entity for a in self.attributes)
        return _dedup(names)

    def within_cap(self) -> tuple[Extraction, int]:
        """This extraction without facts over MAX_EMBEDDABLE_TEXT_BYTES, and how many were
        dropped (the job's ``skipped_over_cap``). Relations and attributes are kept."""
        kept = tuple(f for f in self.facts if not f.over_cap)
        return Extraction(kept, self.relations, self.attributes), len(self.facts) - len(kept)

    def to_json(self) -> str:
        """A canonical JSON document of this extraction (stable bytes for the same content)."""
        doc = {
            "version": FORMAT_VERSION,
            "facts": [{"text": f.text, "topics": list(f.topics)} for f in self.facts],
            "relations": [[r.subject, r.predicate, r.object] for r in self.relations],
            "attributes": [[a.entity, a.key, a.value] for a in self.attributes],
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)

    @classmethod
    def from_json(cls, raw: str) -> Extraction:
        """Parse ``to_json``'s output, re-validating every part; InvalidInput if it is not one."""
        try:
            doc = json.loads(raw, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"not a stored extraction: {exc}") from None
        if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
            raise InvalidInput(f"not a stored extraction of format version {FORMAT_VERSION}")
        try:
            facts = [make_fact(_str(f["text"]), [_str(t) for t in f["topics"]])
                     for f in doc["facts"]]
            relations = [make_relation(*(_str(x) for x in _triple(r))) for r in doc["relations"]]
            attributes = [make_attribute(_str(e), _str(k), v)
                          for e, k, v in (_triple(a) for a in doc["attributes"])]
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"not a stored extraction: malformed part ({exc})") from None
        out = cls.build(facts, relations, attributes)
        if out.to_json() != raw:
            raise InvalidInput("not a canonical stored extraction (it would not replay the same)")
        return out


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _triple(value: object) -> list[Any]:
    if not isinstance(value, list) or len(value) != 3:
        raise TypeError("expected a 3-item list")
    return value


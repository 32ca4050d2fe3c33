"""Updates win: detect that a new fact changes an older one, and order results by version.

Detection is offline (no model): two facts are versions of one statement when their *subject*
words (lowercase words minus stopwords, update phrasing and the values themselves) overlap by at
least ``limits.SUPERSEDE_SUBJECT_OVERLAP`` (overlap coefficient) while a *value* is replaced
(each side has one the other lacks) or negation flips, and the change is small: at most
``SUPERSEDE_MAX_SUBJECT_CHANGE`` subject words and ``SUPERSEDE_MAX_VALUE_CHANGE`` values on each
side differ (two descriptions of different things in one template differ in more). Values: numbers and dates, month and day
names, proper names (capitalised words past a sentence start, CamelCase), negation; a number
after a label word ("ticket 12", "step 3") names a thing and counts as subject. The new fact is then linked ``new --supersedes--> old``; an explicit
``relate(new, old, "supersedes")`` makes the same edge and is read the same way.

Reading: ``order_versions`` puts the newest version of a chain before any older one found by a
query (pulling it in when the query did not find it) and tells which result each older one is
superseded by; with ``history`` every version of the chain is listed, newest first. Nothing is
ever dropped from the store: older versions stay retrievable by id, in ``export`` and in ``why``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from velesmem import limits
from velesmem.embed.stopwords import STOPWORDS
from velesmem.errors import Internal
from velesmem.store import FactStore, SearchStore, StoredFact

SUPERSEDES = "supersedes"

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_']*|\d[\d.,:/-]*[a-z%]*")
_SENTENCE_END = ".!?:;"
_NEGATION = frozenset({"not", "no", "never", "none", "without", "nobody", "nothing", "neither",
                       "nor", "cannot", "disabled", "off"})
_TIME_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "q1", "q2", "q3", "q4"})
# words whose following number names a thing ("ticket 12", "step 3") rather than a value of it
_LABELS = frozenset({
    "number", "no", "item", "step", "part", "chapter", "ticket", "issue", "pr", "phase", "row",
    "line", "page", "section", "case", "test", "fact", "note", "entry", "record", "doc",
    "document", "task", "story", "bug", "adr", "rfc", "room", "user", "customer", "order", "id",
    "sprint", "milestone", "episode", "session", "turn", "message", "question", "answer",
    "example", "sample", "batch", "job", "run", "build", "shard", "node", "worker", "replica"})
# nouns whose following number is a value of them ("version 1.27", "limit 600")
_VALUE_WORDS = frozenset({
    "version", "v", "level", "size", "limit", "timeout", "port", "budget", "sdk", "api", "tier",
    "plan", "score", "rate", "ratio", "threshold", "quota", "cap", "max", "min", "maximum",
    "minimum", "target", "price", "cost", "at", "every", "by", "about", "around", "approximately"})
# phrasing that announces a change rather than naming the subject
_UPDATE_WORDS = frozenset({
    "now", "since", "from", "as", "of", "starting", "changed", "change", "updated", "update",
    "instead", "anymore", "longer", "new", "newly", "currently", "moved", "switched", "raised",
    "lowered", "increased", "decreased", "reduced", "bumped", "today", "effective", "onwards",
    "going", "forward", "replaced", "has", "have", "been", "was", "were", "is", "are", "will",
    "be", "still", "again", "also", "actually", "turns", "out", "correction"})


@dataclass(frozen=True)
class Statement:
    """A fact split into what it is about (subject words) and what it says of it (values)."""

    subject: frozenset[str]
    values: frozenset[str]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _labels(previous: str, text: str, at: int) -> bool:
    """Whether the number at ``at`` names a thing ("ticket 12", "writer 5", "#3") rather than
    giving a value: it follows ``#`` or a lowercase noun-like word. Words that announce a value
    ("version", "allows", "charges", stopwords like "is" / "to") leave it a value."""
    if text[max(at - 1, 0)] == "#" or previous in _LABELS:
        return True
    if not previous or previous in _VALUE_WORDS or previous in STOPWORDS:
        return False
    if previous in _UPDATE_WORDS or previous in _TIME_WORDS or previous.endswith("s"):
        return False
    word_start = text.rfind(previous, 0, at) if previous else -1
    return word_start >= 0 and text[word_start:word_start + 1].islower()


def _sentence_start(text: str, at: int) -> bool:
    """Whether the word at ``at`` opens a sentence: only whitespace before it, back to the
    text's start, a newline, or sentence punctuation followed by whitespace. (Looks back over
    the whitespace only: a regex anchored at ``at`` and searched from 0 made ``statement``
    quadratic in the text's length.)"""
    start = at
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return (start == 0 or "\n" in text[start:at]
            or (start < at and text[start - 1] in _SENTENCE_END))


@lru_cache(maxsize=limits.STATEMENT_CACHE)
def statement(text: str) -> Statement:
    """Subject words and values of ``text`` (see the module docstring); the texts compared
    most often (a store's popular candidates) are remembered."""
    subject: set[str] = set()
    values: set[str] = set()
    previous = ""
    for match in _WORD.finditer(text):
        token = match.group(0)
        low = token.lower().rstrip(".,:/-")
        if low.endswith("n't"):
            values.add("not")
            low = low[:-3]
        if low[0].isalpha() and any(ch.isdigit() for ch in low) and low not in _TIME_WORDS:
            subject.add(low)  # an identifier such as item12 or s3: part of what it is about
            previous = low
            continue
        if any(ch.isdigit() for ch in low) and _labels(previous, text, match.start()):
            subject.add(f"{previous}#{low}")  # "ticket 12", "step 3": a name, not a value
            continue
        previous = low
        if any(ch.isdigit() for ch in low) or low in _TIME_WORDS:
            values.add(low)
            continue
        if low in _NEGATION:
            values.add("not")
            continue
        starts = _sentence_start(text, match.start())
        camel = any(ch.isupper() for ch in token[1:])
        if (token[0].isupper() and not starts) or camel:
            values.add(low)
            continue
        if low in STOPWORDS or low in _UPDATE_WORDS or len(low) < 2:
            continue
        subject.add(_stem(low))
    return Statement(frozenset(subject), frozenset(values))


@lru_cache(maxsize=limits.STATEMENT_CACHE)
def _subject_words(text: str) -> frozenset[str]:
    """Every word ``statement`` could put in ``text``'s subject outside its labels ("ticket#12"):
    each token as read there, and its stem. One regex pass, no parse: a cheap superset (a
    popular candidate's remembered, as its statement is)."""
    out: set[str] = set()
    for token in _WORD.findall(text):
        low = token.lower().rstrip(".,:/-")
        if low.endswith("n't"):
            low = low[:-3]
        out.add(low)
        out.add(_stem(low))
    return frozenset(out)


def may_change(mine: Statement, text: str) -> bool:
    """Whether ``changes_statement(mine, statement(text))`` can hold: at most
    ``SUPERSEDE_MAX_SUBJECT_CHANGE`` of ``mine``'s subject words (outside its labels) may be
    missing from ``text``. A necessary condition, checked before parsing a candidate."""
    return _may_keep_subject(_plain_subject(mine), text)


def _plain_subject(mine: Statement) -> frozenset[str]:
    """``mine``'s subject words outside its labels: what ``may_change`` looks for."""
    return frozenset(w for w in mine.subject if "#" not in w)


def _may_keep_subject(plain: frozenset[str], text: str) -> bool:
    """``may_change`` given the statement's ``_plain_subject`` (read once per new fact)."""
    if len(plain) <= limits.SUPERSEDE_MAX_SUBJECT_CHANGE:
        return True
    return len(plain - _subject_words(text)) <= limits.SUPERSEDE_MAX_SUBJECT_CHANGE


def changes(new: str, old: str) -> bool:
    """Whether ``new`` states a different value for the subject of ``old``."""
    return changes_statement(statement(new), statement(old))


def changes_statement(a: Statement, b: Statement) -> bool:
    """``changes`` on the two texts' statements."""
    if min(len(a.subject), len(b.subject)) < limits.SUPERSEDE_MIN_SUBJECT_WORDS:
        return False
    overlap = len(a.subject & b.subject) / min(len(a.subject), len(b.subject))
    if overlap < limits.SUPERSEDE_SUBJECT_OVERLAP:
        return False
    if len(a.subject ^ b.subject) > limits.SUPERSEDE_MAX_SUBJECT_CHANGE or max(
            len(a.values - b.values), len(b.values - a.values)) > limits.SUPERSEDE_MAX_VALUE_CHANGE:
        return False  # more than one thing changed: another fact, not a new version
    if ("not" in a.values) != ("not" in b.values):
        return True  # negated, or no longer negated
    # a value replaced by another; one only added or left out (an acronym, a date) is no change
    return bool(a.values - b.values) and bool(b.values - a.values)


def same_scope(a: dict[str, object], b: dict[str, object]) -> bool:
    """Both facts carry the same values for the metadata keys that scope memory."""
    return all(a.get(k) == b.get(k) for k in limits.SCOPE_KEYS)


class VersionStore(FactStore, SearchStore, Protocol):
    """The roles detection and ordering read."""


def find_superseded(store: VersionStore, key: int, content: str, metadata: dict[str, object],
                    vector: np.ndarray | None, now: float, *,
                    near: Sequence[tuple[int, float]] | None = None,
                    rows: Mapping[int, StoredFact] | None = None) -> int | None:
    """The newest live fact in the same scope that ``content`` (about to be stored under
    ``key``, embedded as ``vector``) changes, or None. Reads only the vector index's best few
    candidates (``near``/``rows`` when the caller read them already). Not BM25: its term caches
    would remember the new fact's words as unknown. A fact written while the model loads (no
    vector yet) is not checked."""
    if vector is None:
        return None
    if near is None:
        n = limits.SUPERSEDE_CANDIDATES + 1
        try:
            near = [(int(k), float(c)) for k, c in store.vector_search(vector, n, None)]
        except Internal:  # the index still loads (or the store closes): the write goes on
            return None
    keys = [k for k, _ in near if k != key]
    if not keys:
        return None
    found = dict(rows) if rows is not None else store.facts(keys, now)
    found = {k: found[k] for k in keys if k in found}
    mine = statement(content)
    plain = _plain_subject(mine)
    matches = [f for f in found.values()
               if same_scope(f.metadata, metadata) and _may_keep_subject(plain, f.content)
               and changes_statement(mine, statement(f.content))
               and key not in _linked(store, f.key, now, incoming=False)]  # not a newer one
    if not matches:
        return None
    return max(matches, key=lambda f: (f.created_at, f.key)).key


def _linked(store: VersionStore, key: int, now: float, incoming: bool) -> list[int]:
    rows = (store.in_edges if incoming else store.out_edges)(key, now, limits.MAX_SUPERSEDE_CHAIN)
    return [k for k, rel in rows if rel == SUPERSEDES]


def _newest(facts: dict[int, StoredFact], keys: Iterable[int]) -> int | None:
    live = [facts[k] for k in keys if k in facts]
    return None if not live else max(live, key=lambda f: (f.created_at, f.key)).key


def _everything(key: int) -> bool:
    return True


def successor(store: VersionStore, key: int, now: float,
              admit: Callable[[int], bool] = _everything) -> int | None:
    """The newest live user fact that supersedes ``key`` (among those ``admit`` lets through,
    e.g. a recall's filter), or None."""
    newer = [k for k in _linked(store, key, now, incoming=True) if admit(k)]
    return _newest(store.facts(newer, now), newer) if newer else None


def head(store: VersionStore, key: int, now: float,
         admit: Callable[[int], bool] = _everything) -> list[int]:
    """The successor path from ``key`` up to the newest (admitted) version: [newest, …, key]."""
    path = [key]
    while len(path) < limits.MAX_SUPERSEDE_CHAIN:
        nxt = successor(store, path[-1], now, admit)
        if nxt is None or nxt in path:
            break
        path.append(nxt)
    return path[::-1]


def older(store: VersionStore, key: int, now: float,
          admit: Callable[[int], bool] = _everything) -> list[int]:
    """Every live (admitted) version that ``key`` supersedes, directly or not, newest first."""
    seen: dict[int, StoredFact] = {}
    frontier = [key]
    while frontier and len(seen) < limits.MAX_SUPERSEDE_CHAIN:
        nxt: list[int] = []
        for k in frontier:
            prev = [p for p in _linked(store, k, now, incoming=False)
                    if p not in seen and p != key and admit(p)]
            for p, fact in store.facts(prev, now).items():
                seen[p] = fact
                nxt.append(p)
        frontier = nxt
    return [f.key for f in sorted(seen.values(), key=lambda f: (-f.created_at, f.key))]


@dataclass(frozen=True)
class Version:
    """One result slot: the fact's key, the key of the ranked hit that brought it in, and the
    newer version it is superseded by (None: it is the newest)."""

    key: int
    hit: int
    superseded_by: int | None


def order_versions(store: VersionStore, hits: list[int], now: float, *, history: bool = False,
                   admit: Callable[[int], bool] = _everything,
                   unlinked: Container[int] = frozenset()) -> list[Version]:
    """``hits`` (best first) with each chain's newest version placed before its older ones;
    each key once. With ``history``, every version of each hit's chain follows its newest.
    Only versions ``admit`` lets through (the recall's filter) are pulled in or named. Hits in
    ``unlinked`` (known to touch no ``supersedes`` edge) are their own chain: no edge is read."""
    out: list[Version] = []
    seen: set[int] = set()
    for hit in hits:
        if hit in unlinked:
            if hit not in seen:
                seen.add(hit)
                out.append(Version(hit, hit, None))
            continue
        path = head(store, hit, now, admit)
        chain = [path[0], *older(store, path[0], now, admit)] if history else [path[0], hit]
        for key in chain:
            if key in seen:
                continue
            seen.add(key)
            later = None if key == path[0] else successor(store, key, now, admit)
            out.append(Version(key, hit, later))
    return out


__all__ = ["SUPERSEDES", "Statement", "Version", "VersionStore", "changes", "find_superseded", "head", "may_change", "older",
           "order_versions", "same_scope", "statement", "successor"]

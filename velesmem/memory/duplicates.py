"""Near-duplicate facts: detect them on remember, collapse them in results.

Two facts are duplicates when they say the same thing in the same scope: their *values* agree
exactly (numbers and number words, negation, proper names and identifiers, weekdays/months) and
their wording is close (token overlap) or their vectors are (cosine). Thresholds are calibrated
on ``bench/data/duplicates.jsonl`` by ``bench/duplicates.py``. Nothing is ever deleted: a new
duplicate is stored and linked ``duplicate_of`` the existing fact; results show one representative
per group and name the others in ``duplicates``.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from velesmem import limits
from velesmem.extract.names import NOT_NAME_WORDS, SYSTEM_NOUNS
from velesmem.store import FactStore, SearchStore, StoredFact

RELATION = "duplicate_of"


@dataclass(frozen=True)
class Thresholds:
    """When two facts with the same values are duplicates: wording overlap or vector cosine."""

    lexical: float
    cosine: float


# calibrated on the tuning half of bench/data/duplicates.jsonl (bench/duplicates.py), per
# embedder family: the cosine scales differ. A fact not embedded yet is checked lexically.
LEXICAL_THRESHOLD = 0.5  # lexical only (no vector at write time)
COSINE_THRESHOLD = 0.9  # an embedder not calibrated here (ollama, openai): strict
TUNED = {"hash": Thresholds(lexical=0.5, cosine=0.72),
         "local": Thresholds(lexical=1.0, cosine=0.76)}
MIN_SHARED_WORDS = 3
# the longer fact must not say much more than the shorter: shared words / the longer's words.
# A short fact contained in a longer one ("deploy canary pool" / "deploy canary pool minimum
# raised after the review") is another fact, whatever the overlap with the shorter or the cosine.
COVERAGE_THRESHOLD = 0.5
CONTAINMENT_EXTRA = 3  # words the longer adds to the whole shorter: a fact that says more
# up to this many unrelated words swapped on each side: another object ("the rate limiter" /
# "the billing service"); one word only when both facts share a number, which anchors them
SWAP_WORDS = 2
CANDIDATES = 8  # text/vector candidates examined per remember
MAX_GROUP = 64  # members gathered per duplicate group (bounded walk)

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-'][A-Za-z0-9_]+)*")
_NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "neither", "nor", "without",
                        "cannot", "disabled", "off"})
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty "
    "forty fifty sixty hundred thousand million billion once twice half double".split())
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays "
    "thursdays fridays saturdays sundays january february march april june july august "
    "september october november december daily weekly monthly hourly nightly yearly".split())
# technology names usually written in lower case: a value like a proper name
_TECH = frozenset(
    "httpx aiohttp urllib3 redis postgres postgresql mysql sqlite mongodb kafka rabbitmq "
    "nginx caddy docker podman kubernetes helm terraform ansible numpy pandas scipy django flask "
    "fastapi starlette uvicorn gunicorn celery pytest tox nox pip uv poetry npm pnpm yarn bun "
    "node deno react vue svelte angular webpack vite esbuild grpc graphql protobuf faiss "
    "pgvector elasticsearch opensearch prometheus grafana datadog sentry jaeger vault consul "
    "etcd zookeeper s3 gcs azure aws gcp linux macos windows debian ubuntu alpine".split())
# words whose swap for another changes the fact ("permanent" vs "temporary"): values too
_CONTRASTS = frozenset(
    "permanent permanently temporary temporarily public private internal external sync async synchronous asynchronous "
    "read write read-only allowed denied blocked required optional mandatory primary secondary "
    "replica minimum maximum min max upper lower first last start end open closed inbound "
    "outbound input output client server frontend backend local remote hot cold early late "
    "increase decrease increased decreased faster slower higher lower larger smaller more less "
    "staging production prod dev development test encrypted unencrypted plaintext signed "
    "unsigned success failure succeeded failed accepted rejected included excluded old new "
    "legacy deprecated stable beta alpha experimental".split())
_STOP = frozenset(
    "a an the is are was were be been being of to in on at by for with and or as it its this "
    "that these those from into per each every any all our we us they their there here has have "
    "had do does did so than then also which who whom what when where how just only now set "
    "should must will would can could may might shall".split())


@dataclass(frozen=True)
class Signature:
    """What the lexical check compares: values that must agree, and the wording."""

    values: frozenset[str]
    negated: bool
    words: frozenset[str]
    tokens: frozenset[str]  # every lower-cased token, to find the other side's values in
    contrasts: frozenset[str]  # words that change the fact when swapped for another of them
    sequence: tuple[str, ...] = ()  # the lower-cased tokens in order
    systems: frozenset[tuple[str, str]] = frozenset()  # (modifier, head): "billing", "api"


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _modifier(word: str) -> bool:
    """Whether ``word`` before a system noun names which system ("billing" api, "rate"
    limiter), not how it is described ("each", "new", "public")."""
    return (word not in _STOP and word not in NOT_NAME_WORDS and word not in _CONTRASTS
            and word not in SYSTEM_NOUNS and not any(c.isdigit() for c in word))


def _is_name(token: str, first: bool) -> bool:
    """A proper name or an identifier: capitalised mid-sentence, CamelCase, or with a digit,
    an underscore or a dot inside, or a known technology name."""
    if any(c.isdigit() or c in "_." for c in token) or token.lower() in _TECH:
        return True
    upper = sum(c.isupper() for c in token)
    return upper > 1 or (upper == 1 and token[0].isupper() and not first)


@lru_cache(maxsize=limits.STATEMENT_CACHE)
def signature(text: str) -> Signature:
    """The lexical signature of one fact's text (the most recent ones remembered)."""
    values: set[str] = set()
    words: set[str] = set()
    tokens: set[str] = set()
    contrasts: set[str] = set()
    negated = False
    sequence: list[str] = []
    systems: set[tuple[str, str]] = set()
    for n, token in enumerate(_WORD.findall(text.replace("n't", " not"))):
        low = token.lower()
        tokens.add(low)
        sequence.append(low)
        if low in _NEGATIONS:
            negated = not negated
            continue
        if low in _CONTRASTS:
            contrasts.add(low)
        if any(c.isdigit() for c in low) or low in _NUMBER_WORDS or low in _CALENDAR:
            value = low[:-1] if low in _CALENDAR and low.endswith("days") else low
            values.add(value)
            tokens.add(value)
        elif _is_name(token, n == 0) and low not in _STOP:
            values.add(low)
        if low in SYSTEM_NOUNS and len(sequence) > 1 and _modifier(sequence[-2]):
            # "the billing api": which system is a value (the modifier), and the same modifier
            # on another head noun ("billing store") is another system
            values.add(sequence[-2])
            systems.add((sequence[-2], low[:-1] if low.endswith("s") else low))
        if low not in _STOP:
            words.add(_stem(low))
    return Signature(frozenset(values), negated, frozenset(words), frozenset(tokens),
                     frozenset(contrasts), tuple(sequence), frozenset(systems))


def lexical_similarity(a: Signature, b: Signature) -> float:
    """Overlap of the two wordings: |A∩B| / min(|A|, |B|); 0.0 when fewer than
    MIN_SHARED_WORDS words are shared and the shorter is not contained in the longer (two short
    facts sharing a subject say different things about it)."""
    if not a.words or not b.words:
        return 0.0
    shared = len(a.words & b.words)
    smaller = min(len(a.words), len(b.words))
    only_a, only_b = a.words - b.words, b.words - a.words
    anchored = any(any(c.isdigit() for c in v) for v in a.values & b.values)
    if _swapped(only_a, only_b, 1 if anchored else SWAP_WORDS):
        return 0.0  # a word or two swapped for unrelated ones: another value, not a rewording
    if shared < MIN_SHARED_WORDS and shared < smaller:
        return 0.0
    return shared / smaller


def _swapped(only_a: frozenset[str], only_b: frozenset[str], most: int) -> bool:
    """Whether each side has at most ``most`` words of its own, none a form of the other
    side's ("owns the rate limiter" / "owns the billing service"): another object, not a
    rewording."""
    if not only_a or not only_b or len(only_a) > most or len(only_b) > most:
        return False
    return not any(_variants(x, y) for x in only_a for y in only_b)


def substituted(a: Signature, b: Signature) -> bool:
    """Whether the two texts are one sentence with one or two words put in place of unrelated
    ones ("the billing api times out after 30 s" / "the search api times out after 30 s"):
    facts written from one pattern about different things, however close their vectors."""
    if len(a.sequence) != len(b.sequence):
        return False
    pairs = [(x, y) for x, y in zip(a.sequence, b.sequence, strict=True) if x != y]
    return (0 < len(pairs) <= SWAP_WORDS
            and not any(_variants(_stem(x), _stem(y)) for x, y in pairs))


def contains_more(a: Signature, b: Signature, extra: int = CONTAINMENT_EXTRA) -> bool:
    """Whether the longer wording holds the shorter (all its words) and adds
    ``extra`` words or more of its own: a fact that says more, not the same thing."""
    short, long_ = sorted((a.words, b.words), key=len)
    return short <= long_ and len(long_ - short) >= extra


def _variants(x: str, y: str) -> bool:
    """Two forms of one word ("owns"/"owned", "call"/"on-call"): a shared 4-letter stem."""
    return x[:4] == y[:4] or x in y or y in x


def same_values(a: Signature, b: Signature) -> bool:
    """Whether the two facts agree on every value (numbers, names, negation, dates): each
    side's values appear among the other's tokens (a name opening a sentence is not marked as
    one by its capital, so it is looked for, not compared), and neither swaps a contrast
    word for another ("permanent" → "temporary")."""
    swapped = bool(a.contrasts - b.tokens) and bool(b.contrasts - a.tokens)
    heads_b = dict(b.systems)
    other_system = any(m in heads_b and heads_b[m] != h and (m, heads_b[m]) not in a.systems
                       for m, h in a.systems)
    return (a.negated == b.negated and a.values <= b.tokens and b.values <= a.tokens
            and not swapped and not other_system)


def coverage(a: Signature, b: Signature) -> float:
    """Shared words / the longer wording's words: low when one fact contains the other and
    adds to it."""
    longer = max(len(a.words), len(b.words))
    return len(a.words & b.words) / longer if longer else 0.0


def is_duplicate(a: Signature, b: Signature, cosine: float | None = None, *,
                 lexical: float = LEXICAL_THRESHOLD, vector: float = COSINE_THRESHOLD,
                 cover: float = COVERAGE_THRESHOLD) -> bool:
    """Same values, neither saying much more than the other, and close wording or (when both
    have vectors) a close vector."""
    if (not same_values(a, b) or coverage(a, b) < cover or contains_more(a, b)
            or substituted(a, b)):
        return False
    if lexical_similarity(a, b) >= lexical:
        return True
    return cosine is not None and cosine >= vector


def family(model: str) -> str | None:
    """The calibrated embedder family of a model identity ("hash", "local"), or None."""
    if model.startswith("local:"):
        return "local"
    if model.startswith("velesmem-hash"):
        return "hash"
    return None


def thresholds(model: str) -> Thresholds:
    """The thresholds for facts embedded by ``model`` (strict when it is not calibrated)."""
    known = family(model)
    return TUNED[known] if known else Thresholds(LEXICAL_THRESHOLD, COSINE_THRESHOLD)


def scope_of(metadata: Mapping[str, Any], keys: Sequence[str]) -> tuple[Any, ...]:
    """The values of the scope keys (None where absent): facts compare only within one scope."""
    return tuple(repr(metadata.get(k)) for k in keys)


def find_original(store: SearchStore, facts: FactStore, key: int, content: str,
                  metadata: Mapping[str, Any], scope_keys: Sequence[str], now: float,
                  vector: Any = None, tuned: Thresholds | None = None, *,
                  near: Sequence[tuple[int, float]] | None = None,
                  rows: Mapping[int, StoredFact] | None = None) -> int | None:
    """The live fact (int64 key) ``content`` duplicates in its scope, at the root of its group,
    or None. Candidates: the nearest vectors (``near``/``rows`` when the caller read them
    already) or, without a vector, the best BM25 matches; ``tuned`` (the embedder's
    thresholds) applies with a vector, the lexical one without."""
    cosines: dict[int, float] = {}
    if vector is not None:
        if near is None:
            near = [(int(k), float(c)) for k, c in store.vector_search(vector, CANDIDATES + 1,
                                                                      None)]
        cosines = {k: c for k, c in near if k != key}
        candidates = list(cosines)[:CANDIDATES]
    else:
        keys, scores = store.text_search(content, None)
        # best first, ties in index order (a stable sort of the negated scores)
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:CANDIDATES + 1]
        candidates = [int(k) for k in np.asarray(keys)[order] if int(k) != key][:CANDIDATES]
    if not candidates:
        return None
    if rows is None:
        rows = facts.facts(candidates, now)
    mine = signature(content)
    scope = scope_of(metadata, scope_keys)
    best: tuple[float, int] | None = None
    for c in candidates:
        row = rows.get(c)
        if row is None or scope_of(row.metadata, scope_keys) != scope:
            continue
        if not _may_share_values(mine, row.content):
            continue  # one of its values is missing there: not a duplicate, nothing to parse
        theirs = signature(row.content)
        cosine = cosines.get(c)
        if cosine is None:
            found = is_duplicate(mine, theirs)
        else:
            limit = tuned or Thresholds(LEXICAL_THRESHOLD, COSINE_THRESHOLD)
            found = is_duplicate(mine, theirs, cosine, lexical=limit.lexical,
                                 vector=limit.cosine)
        if found:
            score = max(lexical_similarity(mine, theirs), cosines.get(c, 0.0))
            if best is None or score > best[0]:
                best = (score, c)
    return None if best is None else root(facts, best[1], now)


def _may_share_values(mine: Signature, text: str) -> bool:
    """Whether every value of ``mine`` is among ``text``'s tokens: what ``same_values`` asks of
    one side, read with one regex pass instead of a full signature (a day value "monday" is
    also found as "mondays")."""
    if not mine.values:
        return True
    found = _lower_tokens(text)
    return all(v in found or v + "s" in found for v in mine.values)


@lru_cache(maxsize=limits.STATEMENT_CACHE)
def _lower_tokens(text: str) -> frozenset[str]:
    """``text``'s lower-cased tokens ("n't" read as "not"); a popular candidate's remembered."""
    return frozenset(_WORD.findall(text.replace("n't", " not").lower()))


def root(facts: FactStore, key: int, now: float) -> int:
    """Follow ``duplicate_of`` edges to the group's original (bounded, cycle-safe)."""
    seen = {key}
    while len(seen) < MAX_GROUP:
        nxt = [dst for dst, rel in facts.out_edges(key, now, MAX_GROUP) if rel == RELATION]
        if not nxt or nxt[0] in seen:
            return key
        key = nxt[0]
        seen.add(key)
    return key


def group(facts: FactStore, key: int, now: float) -> set[int]:
    """Every live fact linked to ``key`` through ``duplicate_of`` either way (bounded)."""
    members = {key}
    frontier = [key]
    while frontier and len(members) < MAX_GROUP:
        node = frontier.pop()
        linked = [d for d, rel in facts.out_edges(node, now, MAX_GROUP) if rel == RELATION]
        linked += [s for s, rel in facts.in_edges(node, now, MAX_GROUP) if rel == RELATION]
        for other in linked:
            if other not in members and len(members) < MAX_GROUP:
                members.add(other)
                frontier.append(other)
    return members


def collapse(facts: FactStore, ranked: Sequence[int], now: float, k: int, *,
             unlinked: Container[int] = frozenset()) -> list[tuple[int, list[int]]]:
    """The first ``k`` representatives of ``ranked`` (int64 keys, best first), one per duplicate
    group, each with the other members of its group (int64 keys). Keys in ``unlinked`` (known
    to touch no ``duplicate_of`` edge) are groups of one: no edge is read for them."""
    out: list[tuple[int, list[int]]] = []
    taken: set[int] = set()
    for key in ranked:
        if len(out) >= k:
            break
        if key in taken:
            continue
        members = {key} if key in unlinked else group(facts, key, now)
        taken |= members
        out.append((key, sorted(m for m in members if m != key)))
    return out


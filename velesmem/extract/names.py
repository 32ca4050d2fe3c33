"""The offline entity-name finder: people, products and systems a fact names, no model needed.

``find_names(text)`` returns two kinds of names, each with a lowercase canonical hub name, so
two facts that mention the same person or system meet through one hub, as identifiers do:

- ``name``: a multiword proper name, two to four capitalised words in a row (``Kenji Sato``,
  ``Maria Lopez``). A capitalised word that only opens a sentence (``Since``, ``Ask``) or is a
  stopword, a month or a weekday is not part of a name; a run of five or more is a title.
- ``technology``: a name from a small committed vocabulary (``Vault``, ``Kafka``, ``PostgreSQL``,
  ``Redis`` …), with aliases (``Postgres`` → ``postgresql``). Names that are also common words
  (``Vault``, ``Spark``, ``Consul``) are taken only when capitalised.
- ``system``: a service or system a team names with common nouns, after ``the`` (``the rate
  limiter``, ``the billing service``, ``the API gateway``): one or two modifier words, then a
  system noun (``SYSTEM_NOUNS``). A modifier that only describes (``the new service``, ``the
  failed job``, ``the same api``) makes no name; ``the rate limiter service`` is ``rate
  limiter``. Precision on ``bench/data/entities.jsonl``: ``bench/entities.py``.

CamelCase and ``snake_case`` names are ``identifiers``' symbols. Matching is conservative: a
wrong hub connects unrelated facts, a missing one only loses a shortcut.
"""

from __future__ import annotations

import re

from velesmem import limits
from velesmem.embed.stopwords import STOPWORDS
from velesmem.extract.identifiers import Identifier

NAME, TECHNOLOGY, SYSTEM = "name", "technology", "system"
MIN_NAME_WORDS, MAX_NAME_WORDS = 2, 4

# canonical → its spellings (lowercase); a spelling is matched as a whole word.
TECHNOLOGIES: dict[str, tuple[str, ...]] = {
    "postgresql": ("postgresql", "postgres"), "kubernetes": ("kubernetes", "k8s"),
    "mysql": ("mysql",), "sqlite": ("sqlite",), "redis": ("redis",), "kafka": ("kafka",),
    "rabbitmq": ("rabbitmq",), "mongodb": ("mongodb", "mongo"), "cassandra": ("cassandra",),
    "elasticsearch": ("elasticsearch",), "opensearch": ("opensearch",), "clickhouse": ("clickhouse",),
    "etcd": ("etcd",), "nginx": ("nginx",), "haproxy": ("haproxy",), "docker": ("docker",),
    "terraform": ("terraform",), "ansible": ("ansible",), "grafana": ("grafana",),
    "prometheus": ("prometheus",), "datadog": ("datadog",), "pagerduty": ("pagerduty",),
    "sentry": ("sentry",), "jenkins": ("jenkins",), "github": ("github",), "gitlab": ("gitlab",),
    "jira": ("jira",), "okta": ("okta",), "keycloak": ("keycloak",), "cloudflare": ("cloudflare",),
    "aws": ("aws",), "gcp": ("gcp",), "azure": ("azure",), "s3": ("s3",), "faiss": ("faiss",),
    "pytorch": ("pytorch",), "tensorflow": ("tensorflow",), "numpy": ("numpy",),
    "pandas": ("pandas",), "django": ("django",), "fastapi": ("fastapi",), "graphql": ("graphql",),
    "grpc": ("grpc",), "istio": ("istio",), "vault": ("vault",), "consul": ("consul",),
    "nomad": ("nomad",), "spark": ("spark",), "airflow": ("airflow",), "celery": ("celery",),
    "flask": ("flask",), "react": ("react",), "helm": ("helm",), "envoy": ("envoy",),
    "slack": ("slack",), "stripe": ("stripe",), "snowflake": ("snowflake",),
}
# Also everyday words: taken only when written with a capital (the Vault, not a bank vault).
CAPITALISED_ONLY = frozenset({"vault", "consul", "nomad", "spark", "airflow", "celery", "flask",
                              "react", "helm", "envoy", "slack", "stripe", "snowflake", "sentry",
                              "mongo", "pandas", "prometheus", "cassandra", "docker"})
_SPELLING = {s: canonical for canonical, spellings in TECHNOLOGIES.items() for s in spellings}

# head nouns of the systems a team names with common words: "the billing service", "the rate
# limiter", "the ingest worker" (the word before the head says which one)
SYSTEM_NOUNS = frozenset("""
service services api apis worker workers cache caches queue queues scheduler gateway indexer
proxy store stream streams limiter database db cluster pipeline job jobs bucket bot app server
servers index endpoint dashboard library repo repository daemon cron crawler consumer producer
broker backend frontend monolith microservice lambda function
""".split())

# Capitalised words that are not (part of) a name: calendar words, and those that open a note.
NOT_NAME_WORDS = STOPWORDS | frozenset("""
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday tonight
since until after before during when while ask asked ping pinged call tell told see note notes
please thanks per use used using update updated fix fixed add added remove removed also then
however meanwhile yes no ok okay every each last next new old decision decided agreed todo done
""".split())

# modifiers that describe a system rather than say which one ("the new service")
DESCRIBING = frozenset("""
new old main same other whole first last next previous current default public private internal
external shared single primary secondary legacy entire real actual whole big small large slow
fast local remote upstream downstream underlying corresponding relevant existing affected
broken flaky faulty own only every each any some this that these those our your their its his
her such various several many few more most less least
""".split())
_SYSTEM_RE = re.compile(
    r"\b[Tt]he ((?:(?:[a-z][a-z0-9]*(?:-[a-z0-9]+)*|[A-Z]{2,6}) ){1,2})("
    + "|".join(sorted(SYSTEM_NOUNS, key=len, reverse=True)) + r")\b")


Trie = dict[str, "Trie"]  # a letter → the tree of what may follow it; "" marks a word's end


def _trie_alternation(words: list[str]) -> str:
    """A regex matching exactly ``words``, longest first, written as a prefix tree: at each
    position the engine follows one branch per letter instead of trying every word in turn."""
    trie: Trie = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: Trie) -> str:
        alternatives = [re.escape(char) + branch(child)
                        for char, child in sorted(node.items()) if char]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return branch(trie)


_TECH_RE = re.compile(
    r"(?<![\w./@#-])(" + _trie_alternation(sorted(_SPELLING)) + r")(?![\w-]|\.\w)",
    re.IGNORECASE)
_CAPITAL = re.compile("[A-Z]")
_WORD = r"[A-Z][a-z]++(?:-[A-Z][a-z]++)?+"
_RUN_RE = re.compile(rf"(?<![\w.@/-]){_WORD}(?: {_WORD})*+(?:['’]s)?+(?![\w@/-]|\.\w)")


def _technologies(text: str) -> list[tuple[int, Identifier]]:
    found = []
    for match in _TECH_RE.finditer(text):
        surface = match.group(1)
        low = surface.lower()
        canonical = _SPELLING.get(low)  # None for "k8ſ": case-blind matching folds ſ to s
        if canonical is None or (low in CAPITALISED_ONLY and not surface[0].isupper()):
            continue
        found.append((match.start(), Identifier(TECHNOLOGY, canonical, surface)))
    return found


def _systems(text: str) -> list[tuple[int, Identifier]]:
    """``the <modifier> <system noun>`` names (see the module docstring)."""
    found = []
    for match in _SYSTEM_RE.finditer(text):
        words = [*match.group(1).split(), match.group(2)]
        if words[-2].lower() in SYSTEM_NOUNS and len(words) == 3:
            words = words[:2]  # "the rate limiter service": the rate limiter
        mods = words[:-1]
        if any(m.lower() in DESCRIBING or m.lower() in NOT_NAME_WORDS or _describes(m)
               for m in mods):
            continue
        name = " ".join(w.lower() for w in words)
        surface = text[match.start(1):match.start(1) + len(" ".join(words))]
        found.append((match.start(1), Identifier(SYSTEM, name, surface)))
    return found


def _describes(word: str) -> bool:
    """A past participle or an adverb ("failed", "newly"): describes, does not name."""
    low = word.lower()
    return len(low) > 4 and low.endswith(("ed", "ly"))


def _opens_sentence(text: str, start: int) -> bool:
    before = text[max(0, start - 16):start].rstrip(" \t-*•")
    return (not before and start < 16) or (bool(before) and before[-1] in ".!?:;\n")


def _opener(word: str) -> bool:
    """A sentence's first word that reads as a verb or an adverb (Reviewed, Rotating, Finally)."""
    return word.lower().endswith(("ed", "ing", "ly"))


def _proper_names(text: str) -> list[tuple[int, Identifier]]:
    found = []
    for match in _RUN_RE.finditer(text):
        surface = re.sub(r"['’]s$", "", match.group(0))
        words = surface.split(" ")
        if len(words) > MAX_NAME_WORDS:
            continue  # a title or a heading, not a name
        start = match.start()
        if _opens_sentence(text, start) and _opener(words[0]):
            start += len(words[0]) + 1
            words = words[1:]
        while words and (words[0].lower() in NOT_NAME_WORDS or words[0].lower() in _SPELLING):
            start += len(words[0]) + 1
            words = words[1:]
        if any(w.lower() in NOT_NAME_WORDS or w.lower() in _SPELLING for w in words):
            continue  # "Kenji And Vault": not one name
        if len(words) < MIN_NAME_WORDS:
            continue
        name = " ".join(words)
        found.append((start, Identifier(NAME, name.lower(), name)))
    return found


def find_names(text: str) -> list[Identifier]:
    """Every entity name in ``text``, first occurrence first, one per canonical name.

    Pure and deterministic; never raises on any string. A name over MAX_IDENTIFIER_BYTES is
    left out (it could not name a hub)."""
    hits = _technologies(text)
    if _CAPITAL.search(text) is not None:  # every proper name starts with a capital
        hits += _proper_names(text)
    if "he " in text:  # every system name follows "the" or "The"
        hits += _systems(text)
    hits.sort(key=lambda h: h[0])
    out: dict[str, Identifier] = {}
    for _, ident in hits:
        if ident.canonical in out:
            continue
        if len(ident.canonical.encode("utf-8", "surrogatepass")) > limits.MAX_IDENTIFIER_BYTES:
            continue
        out[ident.canonical] = ident
    return list(out.values())


def name_hub_name(name: str) -> str | None:
    """The hub name of ``name`` when the whole of it is one entity name (``Postgres`` →
    ``postgresql``, ``Kenji Sato`` → ``kenji sato``); None otherwise."""
    text = name.strip()
    low = text.lower()
    if low in _SPELLING:
        return _SPELLING[low]
    found = find_names(text)
    if len(found) == 1 and found[0].surface == text:
        return found[0].canonical
    return None

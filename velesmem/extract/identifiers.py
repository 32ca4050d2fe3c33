"""The offline identifier finder behind the ``identifiers`` autograph: no model, no network.

``find_identifiers(text)`` returns the identifiers coding agents write — ticket keys, issue and
pull-request numbers, commit hashes, URLs, file paths, code symbols, @handles, names with a
version — each with a canonical name, so the same identifier written two ways in two facts
names the same entity hub and connects them. docs/extraction.md lists every kind with examples
of what is and is not taken.

Matching is deliberately conservative: a wrong hub connects unrelated facts, a missing one only
loses a shortcut. Plain numbers, dates, decimals, prices, ``e.g.``/``i.e.``, ``v2`` alone,
``and/or`` and standard names such as ``UTF-8`` or ``SHA-256`` are never identifiers. Numbers
are compared without their padding: ``ADR-014``, ``ADR 14`` and ``ADR-14`` name one hub. Kinds are
tried in priority order and a claimed stretch of text is not matched again, so the path
``docs/EPIC-317.md`` is one path, not also a ticket. Canonical names are lowercase, like every
entity name. Quantifiers are possessive, so no input makes the scan backtrack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

from velesmem import limits
from velesmem.embed.stopwords import STOPWORDS

URL, ISSUE, PATH, TICKET, VERSION, PACKAGE, COMMIT, HANDLE, SYMBOL, DOMAIN = (
    "url", "issue", "path", "ticket", "version", "package", "commit", "handle", "symbol", "domain")
KINDS = (URL, ISSUE, PATH, TICKET, VERSION, PACKAGE, COMMIT, HANDLE, SYMBOL, DOMAIN)
COMMIT_HUB_HEX = 7  # a commit's hub is named by its first 7 hex digits: short and full forms meet


@dataclass(frozen=True)
class Identifier:
    """One identifier: its kind, canonical (hub) name, and the text it was found as."""

    kind: str
    canonical: str
    surface: str


# --- vocabularies -------------------------------------------------------------------------
FILE_EXTENSIONS = frozenset("""
py pyi pyx ipynb rs go js mjs cjs ts mts cts tsx jsx java kt kts scala groovy c h cc cpp cxx hpp
hh hxx m mm cs fs swift dart rb php pl pm lua r jl ex exs erl hrl hs ml mli clj cljs edn el zig nim
sh bash zsh fish ps1 psm1 bat cmd md markdown rst txt adoc org tex toml yaml yml json jsonc json5
jsonl ndjson xml html htm css scss sass less sql graphql gql proto lock cfg ini conf properties
env gradle mk cmake vue svelte astro csv tsv parquet log pem crt csr plist service socket timer
tmpl j2 tf tfvars hcl nix wasm so dylib dll exe whl gz tgz zip tar patch diff png jpg jpeg gif svg
webp ico pdf
""".split())
FILE_NAMES = frozenset("""
Makefile Dockerfile Containerfile Justfile Rakefile Gemfile Procfile Vagrantfile Jenkinsfile
Brewfile Pipfile Snakefile CODEOWNERS
""".split())
DOTFILES = frozenset("""
gitignore gitattributes gitmodules dockerignore editorconfig env envrc npmrc nvmrc bashrc zshrc
profile pylintrc flake8 prettierrc eslintrc babelrc
""".split())
# Upper-case "KEY-123" prefixes that name a standard or a model, not a tracker project.
NOT_TICKET_KEYS = frozenset("""
UTF UCS SHA MD ISO IEC IEEE CRC AES RSA DES HMAC GPT COVID SARS TLS SSL HTTP IPV ES ECMA ANSI RS
MPEG DDR USB PCIE LTE HDMI PEP ARM AMD RTX GTX CP KB MB GB TB
""".split())
# Document series cited as "KEY-N", "KEY N" or "KEYN" (RFC 9110, ADR 014): one hub per document.
DOC_KEYS = ("ADR", "RFC", "RFD", "KEP", "BIP", "EIP")
TLDS = frozenset("com org net io dev ai edu gov co uk de fr eu info".split())
# Words that precede a decimal without naming software ("section 4.1", "scored 0.95").
NOT_VERSION_NAMES = STOPWORDS | frozenset("""
version versions ver release released releases build chapter section sec figure fig table tab
page pages pp step steps phase part item items level rule article appendix equation eq lemma
theorem exercise question answer grade score scored scores rating rated total cost costs price
priced ratio rate rates weight weights threshold similarity confidence boost factor value values
approximately approx roughly around about ca circa than took takes take averaged average mean
median min max sum is was equals equal got reached hit hits bumped upgraded downgraded moved
dropped rose fell grew line lines row rows col column columns room size sizes p50 p90 p95 p99
latency took recall precision accuracy f1 loss lr epoch epochs temperature top alpha beta gamma
delta sigma lambda mu pi tau eps epsilon tag tags tagged tagging ship ships shipped shipping cut
cuts deploy deploys deployed deploying publish publishes published pin pins pinned rollback
rolled
""".split())
UNITS = (r"%|‰|x|×|times|percent|pct|pts?|points?|s|ms|us|µs|ns|secs?|seconds?|mins?|minutes?"
         r"|h|hrs?|hours?|days?|weeks?|months?|years?|yrs?|b|bytes?|kb|mb|gb|tb|kib|mib|gib|tib"
         r"|k|m|bn|px|em|rem|pt|dpi|kg|g|mg|lb|lbs|km|cm|mm|mi|ft|hz|khz|mhz|ghz|w|kw|v|mah"
         r"|usd|eur|gbp|\$|€|£|tokens?|docs?|facts?|qps|rps|ops|fps|req|requests?|calls?")
ROOT_NOT_PACKAGES = frozenset({"std", "core", "alloc", "crate", "self", "super"})
BACKTICK_NOT_SYMBOLS = frozenset({"true", "false", "none", "null", "nil", "self", "this", "yes",
                                  "no", "and", "or", "not", "on", "off"})

# --- patterns (possessive quantifiers: a failed match never backtracks) --------------------
_EXT = "|".join(sorted(FILE_EXTENSIONS, key=len, reverse=True))
_SEG = r"[\w@+.-]++"
_URL_RE = re.compile(r"(?<![\w@])(?:https?|ftp)://[^\s<>\"'`]++", re.IGNORECASE)
_QUALIFIED_ISSUE_RE = re.compile(
    r"(?<![\w./@-])([A-Za-z0-9][\w.-]*+/[A-Za-z0-9][\w.-]*+)([#!])([0-9]{1,9}+)(?![\w-])")
_WINDOWS_PATH_RE = re.compile(r"(?<![\w])[A-Za-z]:\\(?:[\w@+.-]++\\)*+[\w@+.-]++")
_SLASH_PATH_RE = re.compile(
    rf"(?<![\w/.~:@+-])(?:(?:~/|\.\.?/|/){_SEG}(?:/{_SEG})*+|{_SEG}(?:/{_SEG})++)/?+"
    r"(?::[0-9]++){0,2}+")
_BARE_FILE_RE = re.compile(
    rf"(?<![\w/.@-])(?:[\w@+-][\w@+.-]*?\.(?:{_EXT})|\.(?:{'|'.join(sorted(DOTFILES))})"
    rf"|{'|'.join(sorted(FILE_NAMES))})(?![\w-]|\.\w|/)(?::[0-9]++){{0,2}}+", re.IGNORECASE)
_PREFIXED_ISSUE_RE = re.compile(
    r"(?<![\w-])(?:(PR|Pr|pr|GH|gh|[Pp]ull [Rr]equest|[Ii]ssue)|(MR|mr|[Mm]erge [Rr]equest))"
    r"(?:\s?[#!]|-|\s)\s?+([0-9]{1,9}+)(?![\w-]|\.[0-9])")
_CVE_RE = re.compile(r"(?<![\w-])(CVE|GHSA)-([0-9]{4}-[0-9]{4,7}|[\w]{4}-[\w]{4}-[\w]{4})(?![\w-])",
                     re.IGNORECASE)
_DOC_KEY_RE = re.compile(rf"(?<![\w-])({'|'.join(DOC_KEYS)})[ -]?+([0-9]{{1,5}}+)(?![\w]|[-.][0-9])")
_TICKET_RE = re.compile(r"(?<![\w-])([A-Z][A-Z0-9_]{1,9}+)-([0-9]{1,7}+)(?![\w]|[-.][0-9])")
_HASH_ISSUE_RE = re.compile(r"(?<![\w&#/@-])#([0-9]{1,9}+)(?![\w-]|\.[0-9])")
_BANG_MR_RE = re.compile(r"(?<![^\s(\[,;:])!([0-9]{1,9}+)(?![\w-]|\.[0-9])")
_NAME = r"(?:@[\w.-]++/)?[A-Za-z_][\w.+-]*+(?<=[\w])"
_VERSION_ANY = r"v?[0-9]++(?:\.[0-9]++)*+"
_VERSION_DOTTED = r"v?[0-9]++(?:\.[0-9]++)++(?:-?(?:rc|alpha|beta|a|b|dev|post|pre)\.?[0-9]*+)?+"
_PINNED_RE = re.compile(
    rf"(?<![\w@/.-])({_NAME})\s*+(?:==|>=|<=|~=|!=|\^|~>|@)\s*+({_VERSION_ANY})(?![\w.])")
_ASSIGNED_RE = re.compile(rf"(?<![\w@/.-])({_NAME})\s*+=\s*+\"({_VERSION_ANY})\"")
_SPACED_RE = re.compile(
    rf"(?<![\w@/.$€£-])({_NAME})\s(?:[Vv]ersion\s)?+({_VERSION_DOTTED})(?![\w%‰]|\.[0-9]|-[0-9])"
    rf"(?!\s?(?:{UNITS})(?![\w]))", re.IGNORECASE)
# A release tag: "v" and 2-4 dotted numbers (v1.4, v1.4.0), or a bare semver with a pre-release or
# build suffix (1.4.0-rc.1, 2.0.0+build.7). A bare "1.4.0" stays a number (a section, a date).
_SEMVER_SUFFIX = r"(?:-[0-9A-Za-z][0-9A-Za-z.-]*+)?+(?:\+[0-9A-Za-z][0-9A-Za-z.-]*+)?+"
_TAG_RE = re.compile(
    rf"(?<![\w@/.$€£:+-])(?:[vV][0-9]++(?:\.[0-9]++){{1,3}}+{_SEMVER_SUFFIX}"
    r"|[0-9]++\.[0-9]++\.[0-9]++(?:-[0-9A-Za-z][0-9A-Za-z.-]*+|\+[0-9A-Za-z][0-9A-Za-z.-]*+)"
    rf"{_SEMVER_SUFFIX})(?![\w]|\.[0-9])")
_COMMIT_RE = re.compile(r"(?<![\w#/.:@$-])([0-9a-fA-F]{7,64}+)(?![\w-]|\.\w)")
_HANDLE_RE = re.compile(r"(?<![\w@./+:-])@([A-Za-z0-9][\w-]{0,38}+)(?<=\w)(?![\w@/-]|\.\w)")
_RUST_PATH_RE = re.compile(r"(?<![\w:])[A-Za-z_]\w*+(?:::[A-Za-z_]\w*+)++(?:\(\))?+")
_DOTTED_RE = re.compile(r"(?<![\w.@])[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)++(?:\(\))?+(?![\w-]|\.\w)")
_DUNDER_RE = re.compile(r"(?<![\w.])__[A-Za-z]\w*?__(?!\w)")
_SNAKE_RE = re.compile(r"(?<![\w.])(?=\w*_)\w++(?!-|\.\w)")
_CAMEL_RE = re.compile(
    r"(?<![\w.-])(?=[A-Za-z0-9]*?(?:[a-z][A-Z]|[0-9][A-Z][a-z]|[A-Z]{2}[a-z]{2}))"
    r"[A-Za-z][A-Za-z0-9]*+(?![\w-]|\.\w)")
_BACKTICK_RE = re.compile(r"`([A-Za-z_][\w-]*+)`")
_TRAILING_PUNCT = ".,;:!?'\"*_"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}

Found = list[tuple[str, str]]  # (kind, canonical) pairs one match yields


def _canon(value: str) -> str:
    return value.strip().lower()


# --- one handler per kind: the match → its identifiers ([] to decline) ---------------------

def _trim_url(url: str) -> str:
    while url:
        last = url[-1]
        if last in _TRAILING_PUNCT or (last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last])):
            url = url[:-1]
        else:
            break
    return url


_GITHUB_ITEM = re.compile(r"/([\w.-]+)/([\w.-]+)/(pull|issues)/([0-9]+)(?:/|$)")
_GITLAB_ITEM = re.compile(r"/((?:[\w.-]+/)+)-/(merge_requests|issues)/([0-9]+)(?:/|$)")
_GIT_COMMIT = re.compile(r"/-?/?commits?/([0-9a-f]{7,64})(?:/|$)")


def _url(match: re.Match[str]) -> tuple[int, Found]:
    surface = _trim_url(match.group(0))
    try:
        parts = urlsplit(surface)
        port = parts.port
    except ValueError:
        return len(surface), []
    host = (parts.hostname or "").lower()
    if not host:
        return len(surface), []
    default = {"http": 80, "https": 443, "ftp": 21}.get(parts.scheme.lower())
    netloc = host if port in (None, default) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    canonical = f"{parts.scheme.lower()}://{netloc}{path}" + (f"?{parts.query}" if parts.query
                                                              else "")
    found: Found = [(URL, _canon(canonical))]
    low_path = parts.path.lower()
    if host in ("github.com", "www.github.com"):
        item = _GITHUB_ITEM.match(low_path)
        if item:
            found.append((ISSUE, f"{item.group(1)}/{item.group(2)}#{item.group(4)}"))
    elif host.startswith("gitlab.") or ".gitlab." in host:
        item = _GITLAB_ITEM.search(low_path)
        if item:
            sign = "!" if item.group(2) == "merge_requests" else "#"
            found.append((ISSUE, f"{item.group(1).rstrip('/')}{sign}{item.group(3)}"))
    commit = _GIT_COMMIT.search(low_path)
    if commit and re.search("[0-9]", commit.group(1)) and re.search("[a-f]", commit.group(1)):
        found.append((COMMIT, commit.group(1)[:COMMIT_HUB_HEX]))
    return len(surface), found


def _qualified_issue(match: re.Match[str]) -> tuple[int, Found]:
    repo, sign, number = match.groups()
    if not re.search(r"[A-Za-z]", repo):
        return len(match.group(0)), []
    return len(match.group(0)), [(ISSUE, f"{_canon(repo)}{sign}{int(number)}")]


def _strip_line_suffix(surface: str) -> str:
    return re.sub(r"(?::[0-9]+){1,2}$", "", surface)


def _path_identifiers(path: str) -> Found:
    canonical = _canon(path.replace("\\", "/"))
    canonical = canonical.removeprefix("./").rstrip("/") or canonical
    found: Found = [(PATH, canonical)]
    base = canonical.rsplit("/", 1)[-1]
    if base != canonical and _is_file_name(base):
        found.append((PATH, base))
    return found


def _is_file_name(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem.strip(".") and ext.lower() in FILE_EXTENSIONS) or (
        name in FILE_NAMES or name.lower() in {n.lower() for n in FILE_NAMES})


def _windows_path(match: re.Match[str]) -> tuple[int, Found]:
    surface = match.group(0).rstrip(_TRAILING_PUNCT)
    return len(surface), _path_identifiers(surface)


def _slash_path(match: re.Match[str]) -> tuple[int, Found]:
    surface = match.group(0)
    path = _strip_line_suffix(surface).rstrip(".,;:!?")
    kept = len(surface) if path == _strip_line_suffix(surface) else len(path)
    if "//" in path:
        return kept, []
    anchored = path.startswith(("~/", "./", "../"))
    rooted = path.startswith("/") and not anchored
    segments = [s for s in path.removeprefix("~").strip("/").split("/") if s not in ("", ".", "..")]
    if not segments or not all(re.search(r"[^\W\d_]", s) for s in segments):
        return kept, []  # 1/2/2024, 24/7: numbers, not paths
    last = segments[-1]
    has_file = _is_file_name(last)
    if anchored:
        ok = True
    elif rooted:
        ok = len(segments) >= 2 or has_file
    else:
        ok = has_file or len(segments) >= 3 or (path.endswith("/") and len(segments) >= 2)
    return kept, _path_identifiers(path) if ok else []


def _bare_file(match: re.Match[str]) -> tuple[int, Found]:
    surface = _strip_line_suffix(match.group(0))
    return len(match.group(0)), [(PATH, _canon(surface))]


def _prefixed_issue(match: re.Match[str]) -> tuple[int, Found]:
    sign = "#" if match.group(1) else "!"
    return len(match.group(0)), [(ISSUE, f"{sign}{int(match.group(3))}")]


def _cve(match: re.Match[str]) -> tuple[int, Found]:
    return len(match.group(0)), [(TICKET, _canon(match.group(0)))]


def _doc_key(match: re.Match[str]) -> tuple[int, Found]:
    key, number = match.groups()
    return len(match.group(0)), [(TICKET, f"{key.lower()}-{int(number)}")]


def _ticket(match: re.Match[str]) -> tuple[int, Found]:
    """KEY-123; leading zeros are padding (JIRA-0042 is JIRA-42), an all-zero number is none."""
    key, number = match.groups()
    if key in NOT_TICKET_KEYS or sum(c.isalpha() for c in key) < 2:  # Q3-2024 is a quarter
        return len(match.group(0)), []
    if int(number) == 0:
        return len(match.group(0)), []
    if key in ("PR", "MR", "GH"):  # PR-42 / GH-42: pull request or issue 42, MR-17 merge request
        return len(match.group(0)), [(ISSUE, f"{'!' if key == 'MR' else '#'}{int(number)}")]
    return len(match.group(0)), [(TICKET, f"{key.lower()}-{int(number)}")]


def _hash_issue(match: re.Match[str]) -> tuple[int, Found]:
    return len(match.group(0)), [(ISSUE, f"#{int(match.group(1))}")]


def _bang_mr(match: re.Match[str]) -> tuple[int, Found]:
    return len(match.group(0)), [(ISSUE, f"!{int(match.group(1))}")]


def _version_pair(name: str, version: str) -> Found:
    bare = _canon(name)
    number = version.lower().removeprefix("v")
    return [(VERSION, f"{bare} {number}"), (PACKAGE, bare)]


def _pinned(match: re.Match[str]) -> tuple[int, Found]:
    name, version = match.groups()
    if name.lower() in STOPWORDS:
        return len(match.group(0)), []
    return len(match.group(0)), _version_pair(name, version)


def _spaced(match: re.Match[str]) -> tuple[int, Found]:
    name, version = match.groups()
    number = version.lower().removeprefix("v")
    plain = re.fullmatch(r"[0-9.]+", number)
    if plain and number.count(".") == 3:
        return len(match.group(0)), []  # an IPv4 address
    if name.lower() in NOT_VERSION_NAMES or len(name) < 2 or name.isdigit():
        return len(match.group(0)), []
    return len(match.group(0)), _version_pair(name, version)


def _tag(match: re.Match[str]) -> tuple[int, Found]:
    surface = match.group(0).rstrip(".-+")
    return len(surface), [(VERSION, "v" + surface.lower().removeprefix("v"))]


def _commit(match: re.Match[str]) -> tuple[int, Found]:
    digits = match.group(1)
    size = len(digits)
    ok = (7 <= size <= 40 or size == 64) and (digits.islower() or digits.isupper()
                                               or digits.isdigit())
    ok = ok and re.search("[0-9]", digits) is not None and re.search("[a-fA-F]", digits) is not None
    return size, [(COMMIT, digits.lower()[:COMMIT_HUB_HEX])] if ok else []


def _handle(match: re.Match[str]) -> tuple[int, Found]:
    name = match.group(1)
    if not name[0].isalpha():
        return len(match.group(0)), []  # @2x, @3: sizes and counts, not people
    return len(match.group(0)), [(HANDLE, "@" + name.lower())]


def _rust_path(match: re.Match[str]) -> tuple[int, Found]:
    surface = match.group(0)
    path = surface.removesuffix("()")
    found: Found = [(SYMBOL, _canon(path))]
    root = path.split("::", 1)[0]
    if root.lower() not in ROOT_NOT_PACKAGES and root.lower() not in STOPWORDS:
        found.append((PACKAGE, _canon(root)))
    return len(surface), found


def _dotted(match: re.Match[str]) -> tuple[int, Found]:
    surface = match.group(0)
    path = surface.removesuffix("()")
    parts = path.split(".")
    if all(len(p) <= 2 for p in parts) and any(len(p) == 1 for p in parts):
        return len(surface), []  # e.g, i.e, U.S.A, a.m, Ph.D
    if parts[-1].lower() in TLDS and len(parts) >= 2 and not surface.endswith("()"):
        name = _canon(path).removeprefix("www.")
        return len(surface), [(DOMAIN, name)]
    return len(surface), [(SYMBOL, _canon(path))]


def _dunder(match: re.Match[str]) -> tuple[int, Found]:
    return len(match.group(0)), [(SYMBOL, _canon(match.group(0)))]


def _snake(match: re.Match[str]) -> tuple[int, Found]:
    word = match.group(0)
    core = word.strip("_")
    if not re.search(r"[^\W\d_]", core) or not re.fullmatch(r"[^\W_]+(?:_+[^\W_]+)+", core):
        return len(word), []
    if re.fullmatch(r"_[^_].*[^_]_", word):
        word = word[1:-1]  # _markdown emphasis_, not a name
    return len(match.group(0)), [(SYMBOL, _canon(word))]


def _camel(match: re.Match[str]) -> tuple[int, Found]:
    word = match.group(0)
    if len(word) < 3:
        return len(word), []
    return len(word), [(SYMBOL, _canon(word))]


def _backtick(match: re.Match[str]) -> tuple[int, Found]:
    word = match.group(1)
    if len(word) < 2 or word.lower() in BACKTICK_NOT_SYMBOLS:
        return len(match.group(0)), []
    return len(match.group(0)), [(SYMBOL, _canon(word))]


class Rule(NamedTuple):
    """One kind of identifier: its gate, its pattern, and the handler that reads a match."""

    gate: re.Pattern[str]  # found in every match the handler takes; no gate, no scan
    pattern: re.Pattern[str]
    handler: Callable[[re.Match[str]], tuple[int, Found]]


# Priority order: an earlier rule claims its text first. Each rule has a gate: a pattern found in
# every text its rule can match (in the match itself), searched first because one search costs a
# fraction of a full scan and most facts hold no "/", "@", "::" or "_". Sound gates change no
# answer; tests/extract/test_finder_gates.py checks each against every match it takes in a corpus.
_DIGIT = re.compile(r"[0-9]")
RULES: tuple[Rule, ...] = (
    Rule(re.compile("://"), _URL_RE, _url),
    Rule(re.compile("[#!]"), _QUALIFIED_ISSUE_RE, _qualified_issue),
    Rule(re.compile(r":\\"), _WINDOWS_PATH_RE, _windows_path),
    Rule(re.compile("/"), _SLASH_PATH_RE, _slash_path),
    Rule(re.compile("[.FfWw]"), _BARE_FILE_RE, _bare_file),  # each of FILE_NAMES holds an f or a w
    Rule(_DIGIT, _PREFIXED_ISSUE_RE, _prefixed_issue),
    Rule(re.compile("-"), _CVE_RE, _cve),
    Rule(_DIGIT, _DOC_KEY_RE, _doc_key),
    Rule(re.compile("-"), _TICKET_RE, _ticket),
    Rule(re.compile("#"), _HASH_ISSUE_RE, _hash_issue),
    Rule(re.compile("!"), _BANG_MR_RE, _bang_mr),
    Rule(re.compile("[=^~@]"), _PINNED_RE, _pinned),
    Rule(re.compile('"'), _ASSIGNED_RE, _pinned),
    Rule(re.compile(r"[0-9]\.[0-9]"), _SPACED_RE, _spaced),
    Rule(re.compile(r"[0-9]\.[0-9]"), _TAG_RE, _tag),
    Rule(_DIGIT, _COMMIT_RE, _commit),  # the handler declines a run without a digit
    Rule(re.compile("@"), _HANDLE_RE, _handle),
    Rule(re.compile("::"), _RUST_PATH_RE, _rust_path),
    Rule(re.compile(r"\.[A-Za-z_]"), _DOTTED_RE, _dotted),
    Rule(re.compile("__"), _DUNDER_RE, _dunder),
    Rule(re.compile("_"), _SNAKE_RE, _snake),
    Rule(re.compile("[A-Z]"), _CAMEL_RE, _camel),
    Rule(re.compile("`"), _BACKTICK_RE, _backtick),
)


def find_identifiers(text: str) -> list[Identifier]:
    """Every identifier in ``text``, first occurrence first, one per canonical name.

    Pure and deterministic; never raises on any string. A canonical name longer than
    MAX_IDENTIFIER_BYTES is left out (it could not name a hub).
    """
    claimed = bytearray(len(text))
    hits: list[tuple[int, int, str, str, str]] = []  # (start, order, kind, canonical, surface)
    order = 0
    for gate, pattern, handler in RULES:
        if gate.search(text) is None:
            continue
        for match in pattern.finditer(text):
            start = match.start()
            if claimed.find(1, start, match.end()) != -1:
                continue
            length, found = handler(match)
            if not found:
                continue
            end = start + length
            claimed[start:end] = b"\x01" * (end - start)
            for kind, canonical in found:
                hits.append((start, order, kind, canonical, text[start:end]))
                order += 1
    hits.sort()
    out: dict[str, Identifier] = {}
    for _, _, kind, canonical, surface in hits:
        if canonical in out or not canonical:
            continue
        if len(canonical.encode("utf-8", "surrogatepass")) > limits.MAX_IDENTIFIER_BYTES:
            continue
        out[canonical] = Identifier(kind, canonical, surface)
    return list(out.values())


def identifier_hub_name(name: str) -> str | None:
    """The hub name of ``name`` when the whole of it is one identifier (``ADR-014`` → ``adr-14``)
    or one entity name (``Postgres`` → ``postgresql``), so a lookup by the spelling a fact used finds the hub its identifier was filed under."""
    text = name.strip()
    found = find_identifiers(text)
    if len(found) == 1 and found[0].surface == text:
        return found[0].canonical
    from velesmem.extract.names import name_hub_name  # names builds on this module

    return name_hub_name(text)


# --- the idf floor ------------------------------------------------------------------------

def identifier_idf(df: int, total: int) -> float:
    """ln(total/df)/ln(total) in [0, 1]: 1 for an identifier in one fact, 0 for one in all
    (the entity-idf that recall_fused weighs hubs by). ``df`` is how many facts mention it."""
    if total < 2:
        return 1.0
    df = min(max(df, 1), total)
    return math.log(total / df) / math.log(total)


def too_common(df: int, total: int, *, floor: float = limits.MIN_IDENTIFIER_IDF,
               min_facts: int = limits.IDENTIFIER_IDF_MIN_FACTS) -> bool:
    """True when an identifier mentioned by ``df`` of ``total`` facts gets no hub: its idf is
    below ``floor``. A store with fewer than ``min_facts`` facts never cuts (idf means little
    there and the first links are the most useful)."""
    return total >= min_facts and identifier_idf(df, total) < floor


def hub_worthy(identifiers: Iterable[Identifier], df: Mapping[str, int], total: int, *,
               floor: float = limits.MIN_IDENTIFIER_IDF,
               min_facts: int = limits.IDENTIFIER_IDF_MIN_FACTS) -> list[Identifier]:
    """The identifiers that deserve a hub, given each canonical name's fact count ``df``
    (absent = 0: a new identifier) among ``total`` facts. Order kept."""
    return [i for i in identifiers
            if not too_common(df.get(i.canonical, 0), total, floor=floor, min_facts=min_facts)]

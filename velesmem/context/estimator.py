"""The default token estimator: a deterministic char-class approximation that over-counts cl100k.

Per whitespace-separated word, the ceiling of the summed per-character costs (in 30ths of a
token); plus one token per newline and one per four other characters of any whitespace run
longer than a single space. The costs are the reference's, raised where a real cl100k count
beat them on the committed corpus (``tests/context/estimator_corpus``): ASCII punctuation,
non-ASCII text by UTF-8 width, Korean/Japanese/Chinese, indentation and newlines, and one more
token per case or letter/digit switch inside a word (base64, JWTs, keys). It is checked to
over-count every content class of that corpus, line by line. Known blind spot: long random
all-lowercase strings tokenise worse than any word-based rule predicts; media never goes through
this path (images are priced from their header).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Protocol

_UNIT = 30  # costs are in 30ths of a token

# Per-character costs in 30ths of a token.
_ASCII_LETTER = 9
_ASCII_DIGIT = 30
_ASCII_OTHER = 20
_CJK = 40  # Han, Hiragana, Katakana
_HANGUL = 45
_BY_UTF8_WIDTH = {2: 20, 3: 45, 4: 90}
_SPACES_PER_TOKEN = 4
_TRANSITION = 30  # one more token per lower→upper or letter↔digit switch inside a word
_TRANSITIONS = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")


class TokenEstimator(Protocol):
    """Anything that counts tokens of a text (the default heuristic, or an exact tokenizer)."""

    def estimate(self, text: str) -> int: ...


def _char_cost(c: str) -> int:
    o = ord(c)
    if o < 128:
        if c.isalpha():
            return _ASCII_LETTER
        if c.isdigit():
            return _ASCII_DIGIT
        return _ASCII_OTHER
    if 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF:
        return _CJK
    if 0xAC00 <= o <= 0xD7AF:
        return _HANGUL
    return _BY_UTF8_WIDTH.get(len(c.encode("utf-8")), 90)


_DIGITS = "0123456789"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DROP_DIGITS = str.maketrans("", "", _DIGITS)
_DROP_LETTERS = str.maketrans("", "", _LETTERS)
_WS_LONG = re.compile(r"\s{2,}")
WORD_CACHE_SIZE = 1 << 16  # words repeat a lot (logs, re-sent turns); bounded so a daemon stays flat
CACHED_WORD_CHARS = 64  # longer words are computed, never cached (the cache stays a few MiB)


def _word_tokens(word: str) -> int:
    return _cached_word_tokens(word) if len(word) <= CACHED_WORD_CHARS else _compute_word_tokens(word)


@lru_cache(maxsize=WORD_CACHE_SIZE)
def _cached_word_tokens(word: str) -> int:
    return _compute_word_tokens(word)


def _compute_word_tokens(word: str) -> int:
    if word.isascii():  # C-level counting: the common case
        n = len(word)
        digits = n - len(word.translate(_DROP_DIGITS))
        letters = n - len(word.translate(_DROP_LETTERS))
        total = _ASCII_LETTER * letters + _ASCII_DIGIT * digits + _ASCII_OTHER * (n - letters - digits)
        if letters and n > 1:  # base64, JWTs, API keys: every case / letter-digit switch splits a token
            total += _TRANSITION * len(_TRANSITIONS.findall(word))
    else:
        total = sum(_char_cost(c) for c in word)
    return -(-total // _UNIT)


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (never below a real cl100k count on the corpus).

    Words: ceil of their summed character costs. Whitespace: one token per newline, plus one per
    four other characters of every run longer than one character (a lone space or tab is free: it
    merges into the next word's token).
    """
    # Counting repeats first (C-level) makes repetitive text (logs, re-sent turns) cheap.
    tokens = sum(_word_tokens(w) * n for w, n in Counter(text.split()).items())
    tokens += text.count("\n")
    for m in _WS_LONG.finditer(text):
        run = m.group()
        other = len(run) - run.count("\n")
        tokens += -(-other // _SPACES_PER_TOKEN)
    return tokens


class HeuristicEstimator:
    """The default estimator (the function above as an object, for injection)."""

    def estimate(self, text: str) -> int:
        return estimate_tokens(text)


SEPARATOR = "\n\n"  # what joins packed pieces; costs at most this many extra tokens
SEPARATOR_TOKENS = 2

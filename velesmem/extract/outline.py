"""The ``outline`` extractor: the directive grammar, parsed with no model.

One directive per non-blank line (surrounding whitespace ignored)::

    edge: subject | predicate | object
    attr: entity | key | <JSON value>
    fact: text | topic, topic
    any other line                      a fact with no topics

Keywords are matched case-insensitively and must be followed directly by ``:``. A line that
starts with a keyword but does not follow its form is an error naming the line, never a fact:
garbage is refused, not stored. ``fact:`` may omit ``| topics``; its text is everything before
the last ``|``, so a fact can itself contain ``|``. Names, topics and predicates are trimmed
and lowercased; attribute keys are trimmed; an attribute value is strict JSON.
"""

from __future__ import annotations

import re

from velesmem import limits
from velesmem.errors import InvalidDirective, InvalidInput
from velesmem.extract import model
from velesmem.extract.model import Attribute, Extraction, Fact, Relation

NAME = "outline"
KEYWORDS = ("edge", "attr", "fact")
_KEYWORD = re.compile(r"(edge|attr|fact):", re.IGNORECASE)
_SNIPPET_CHARS = 80

Directive = Fact | Relation | Attribute


def _snippet(line: str) -> str:
    return line if len(line) <= _SNIPPET_CHARS else line[:_SNIPPET_CHARS] + "…"


def is_directive(line: str) -> bool:
    """True when the stripped line starts with ``edge:``, ``attr:`` or ``fact:``."""
    return _KEYWORD.match(line.strip()) is not None


def parse_directive(line: str, number: int) -> Directive | None:
    """The directive on one line, or None for a plain line; InvalidDirective when it is a
    malformed directive (``number`` is the 1-based line number quoted in the error)."""
    stripped = line.strip()
    found = _KEYWORD.match(stripped)
    if found is None:
        return None
    keyword = found.group(1).lower()
    body = stripped[found.end():]
    try:
        if keyword == "edge":
            parts = body.split("|")
            if len(parts) != 3:
                raise InvalidInput(f"has {len(parts)} part(s); the form is "
                                   "'edge: subject | predicate | object'")
            return model.make_relation(*parts)
        if keyword == "attr":
            parts = body.split("|", 2)
            if len(parts) != 3:
                raise InvalidInput(f"has {len(parts)} part(s); the form is "
                                   "'attr: entity | key | <JSON value>'")
            return model.make_attribute(parts[0], parts[1], model.parse_json_value(parts[2]))
        text, bar, topics = body.rpartition("|")
        if not bar:
            return model.make_fact(body)
        return model.make_fact(text, topics.split(","))
    except InvalidInput as exc:
        raise InvalidDirective(number, f"{keyword}: {exc.message} in {_snippet(stripped)!r}") \
            from None


def split_lines(text: str) -> list[str]:
    """Lines split on \\n, \\r\\n or \\r only (a Unicode separator inside a fact stays in it)."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def check_size(text: str) -> None:
    """InvalidInput when the text exceeds MAX_FACT_BYTES (remember_extracted's cap)."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("text is not valid Unicode (lone surrogate)") from None
    if size > limits.MAX_FACT_BYTES:
        raise InvalidInput(f"text is {size} bytes, over the {limits.MAX_FACT_BYTES}-byte cap "
                           "(MAX_FACT_BYTES)")


def parse_outline(text: str) -> Extraction:
    """Parse outline text: every directive line, every other non-blank line a plain fact."""
    check_size(text)
    parts: list[Directive] = []
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        directive = parse_directive(line, number)
        if directive is None:
            try:
                directive = model.make_fact(line)
            except InvalidInput as exc:
                raise InvalidDirective(number, exc.message) from None
        parts.append(directive)
    return collect(parts)


def collect(parts: list[Directive]) -> Extraction:
    """Normalise parsed directives into one Extraction (order of appearance kept)."""
    return Extraction.build([p for p in parts if isinstance(p, Fact)],
                            [p for p in parts if isinstance(p, Relation)],
                            [p for p in parts if isinstance(p, Attribute)])


class OutlineExtractor:
    """The model-free extractor: the caller (often an agent, itself a model) writes the
    directives and sends them with ``extractor: "outline"``."""

    name = NAME

    def extract(self, text: str) -> Extraction:
        """Parse ``text`` as outline directives; InvalidDirective names a malformed line."""
        return parse_outline(text)

    def close(self) -> None:
        """Nothing to release."""

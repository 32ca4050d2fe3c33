"""Reading a model's reply: the outline directives, strictly, within the usual wrapping.

What is accepted (docs/extraction.md repeats it):

* a leading ``<think>…</think>`` block (reasoning models) is dropped; an unclosed one is refused;
* if the reply has a ``` fence, it must hold exactly one fenced block, and only its body is
  read (text around it is commentary); more than one block, or an unclosed one, is refused;
* one list marker (``-``, ``*``, ``•``, ``1.``, ``1)``) before a directive is dropped;
* every directive is parsed by the outline grammar, and a malformed one refuses the reply;
* lines that are not directives are commentary only before the first directive or after the
  last one ("Here are the directives:"); a non-directive line between two directives refuses
  the reply, since it may be a fact the model forgot to mark;
* a reply of just ``NONE`` is an empty extraction; any other reply without a directive is
  refused.

A refused reply stores nothing: the job fails with the reason, which names the reply's line.
"""

from __future__ import annotations

import re

from velesmem.errors import InvalidDirective, InvalidInput
from velesmem.extract.model import Extraction
from velesmem.extract.outline import Directive, collect, is_directive, parse_directive, split_lines

EMPTY_REPLY = "NONE"
_THINK = re.compile(r"\s*<think>.*?</think>", re.DOTALL)
_LIST_MARKER = re.compile(r"(?:[-*•+]|[0-9]{1,3}[.)])\s+")


def _drop_thinking(reply: str) -> str:
    if not reply.lstrip().startswith("<think>"):
        return reply
    found = _THINK.match(reply)
    if found is None:
        raise InvalidInput("the reply's <think> block is not closed (was the reply cut short?)")
    # Keep the line count so error line numbers still point into the reply as received.
    return "\n" * found.group(0).count("\n") + reply[found.end():]


def _fenced_body(lines: list[str]) -> tuple[int, list[str]]:
    """(index of the first line read, the lines to read)."""
    fences = [n for n, line in enumerate(lines) if line.strip().startswith("```")]
    if not fences:
        return 0, lines
    if len(fences) == 1:
        raise InvalidInput(f"line {fences[0] + 1}: the fenced block is not closed")
    if len(fences) > 2:
        raise InvalidInput(f"the reply holds {len(fences)} fence lines; expected the "
                           "directives in at most one fenced block")
    return fences[0] + 1, lines[fences[0] + 1:fences[1]]


def _unmarked(line: str) -> str:
    stripped = line.strip()
    marker = _LIST_MARKER.match(stripped)
    if marker and is_directive(stripped[marker.end():]):
        return stripped[marker.end():]
    return stripped


def parse_reply(reply: str) -> Extraction:
    """The extraction a model's reply states; InvalidInput (InvalidDirective for a line) when
    the reply is not a clean list of directives (see the module docstring for what is)."""
    first, lines = _fenced_body(split_lines(_drop_thinking(reply)))
    numbered = [(first + n + 1, _unmarked(line)) for n, line in enumerate(lines)]
    numbered = [(n, line) for n, line in numbered if line]
    marks = [i for i, (_, line) in enumerate(numbered) if is_directive(line)]
    if not marks:
        if len(numbered) == 1 and numbered[0][1].rstrip(".").upper() == EMPTY_REPLY:
            return Extraction()
        raise InvalidInput("the reply holds no directive (expected lines such as "
                           "'fact: … | topic', or NONE)")
    parts: list[Directive] = []
    for number, line in numbered[marks[0]:marks[-1] + 1]:
        directive = parse_directive(line, number)
        if directive is None:
            raise InvalidDirective(number, "not a directive, between directives: "
                                           f"{line[:80]!r} (every fact needs 'fact:')")
        parts.append(directive)
    return collect(parts)

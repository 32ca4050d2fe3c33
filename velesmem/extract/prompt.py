"""What a remote model is asked: one system prompt, and the passage cut into slices it can read.

The prompt asks for the outline grammar itself, so a model's answer is parsed by the same
strict parser as an agent's directives (``velesmem.extract.reply``).
"""

from __future__ import annotations

import re

from velesmem import limits

SYSTEM_PROMPT = """\
You turn a passage into durable memory for a knowledge graph.
Answer with directives only, one per line, and nothing else: no prose, no numbering, no code \
fences.
  fact: <one self-contained statement from the passage> | <topic>, <topic>
  edge: <subject> | <predicate> | <object>
  attr: <entity> | <key> | <JSON value>
Rules:
- A fact is one atomic statement that makes sense on its own: name people and things instead \
of "he", "she" or "it". Keep it under 300 words.
- Topics, subjects, objects and entities are short names of people, projects, tools, places \
or ideas, such as dana or parser rewrite. Use the same name every time for the same thing.
- A predicate is a short verb phrase, such as leads or depends on.
- An attr value is valid JSON: a number, true, false, null, a "quoted string", a list or an \
object.
- Never put | inside a name, a predicate or a key.
- Copy identifiers exactly: ticket keys, issue and pull request numbers, commit hashes, file \
paths, URLs and version numbers.
- State only what the passage says. Invent nothing.
- If the passage holds nothing worth remembering, answer with the single line NONE.
Example passage: Met Dana at the Rust meetup; she now leads the parser rewrite, which depends \
on logos 0.13.
Example answer:
fact: Dana leads the parser rewrite | dana, parser rewrite
fact: The parser rewrite depends on logos 0.13 | parser rewrite, logos
edge: dana | leads | parser rewrite
edge: parser rewrite | depends on | logos
attr: logos | version | "0.13"
"""

_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _hard_split(text: str, max_bytes: int) -> list[str]:
    """Cut at whitespace where possible, else at a character boundary, each ≤ max_bytes."""
    out: list[str] = []
    while _utf8_len(text) > max_bytes:
        cut = len(text.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore"))
        cut = max(cut, 1)  # max_bytes below one character: still make progress
        space = text.rfind(" ", 0, cut)
        if space > cut // 2:
            cut = space
        out.append(text[:cut])
        text = text[cut:].lstrip(" ")
    if text:
        out.append(text)
    return out


def chunk_text(text: str, max_bytes: int = limits.EXTRACTOR_CHUNK_BYTES) -> list[str]:
    """The passage in slices of at most ``max_bytes`` UTF-8 bytes, cut between paragraphs, else
    between lines, else between words; order kept, blank slices dropped. Deterministic."""
    pieces: list[str] = []
    for paragraph in _PARAGRAPH.split(text.strip()):
        if _utf8_len(paragraph) <= max_bytes:
            pieces.append(paragraph)
            continue
        for line in paragraph.split("\n"):
            pieces.extend(_hard_split(line, max_bytes))
    chunks: list[str] = []
    current = ""
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        joined = f"{current}\n\n{piece}" if current else piece
        if _utf8_len(joined) <= max_bytes:
            current = joined
        else:
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks

"""basic-memory: a folder of Markdown notes, read as basic-memory documents them.

Each note (``*.md``, hidden folders left out) is an entity hub named by its ``title`` (its
frontmatter's, else the file name), with its frontmatter as attributes. In its body:

- an observation (a list item ``- [category] text #tag (context)``, or any line with a
  ``#tag``) is one fact about the note: its text as basic-memory indexes it, its category, tags
  and context, the note, file and section, and the note's frontmatter as metadata;
- a relation (a list item ``- relation_type [[Other Note]] (context)``, the type possibly
  quoted) is a typed edge from this note's hub to the other note's;
- any other ``[[wiki link]]`` is a ``links_to`` edge, as basic-memory makes it;
- the rest of a section (prose, plain bullets, code) is one fact per section about the note.

A link to a note the folder does not hold still gets a hub (as basic-memory keeps a forward
reference). Times: the file's modification time (notes carry none of their own). A file that is
not UTF-8, or whose frontmatter is not a YAML mapping closed by ``---``, refuses the whole
import naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from velesmem.importers.frontmatter import frontmatter as read_frontmatter
from velesmem.importers.records import CorruptInput, Entity, Fact, Link, Record

ABOUT = "about"
LINKS_TO = "links_to"
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)")
TIMESTAMP = re.compile(r"^\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
                       r"(?:\s+-\s+\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?)?$")
WIKI = re.compile(r"\[\[([^\[\]]+?)\]\]")
LINKS_TO_DIRECTIVE = re.compile(r"\s+#bm:links_to\s*$")
# a fact's own metadata keys; frontmatter keys of these names are kept as note_<key>
OWN_KEYS = frozenset({"note", "file", "section", "kind", "category", "tags", "context"})


@dataclass
class _Note:
    rel: str
    title: str
    frontmatter: dict[str, Any]
    mtime: float
    facts: list[Fact] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)  # (type, target, where)


def _observation(content: str) -> dict[str, Any] | None:
    """basic-memory's observation rule: ``[category] text``, or any text with a ``#tag``."""
    content = LINKS_TO_DIRECTIVE.sub("", content).strip()
    if not content or content[:3] in ("[ ]", "[x]", "[-]") or WIKI.fullmatch(content) \
            or re.fullmatch(r"\[.*?\]\(.*?\)", content):
        return None
    category = None
    match = CATEGORY.match(content)
    if match:
        name = match.group(1).strip()
        if TIMESTAMP.match(name) or (len(name) == 1 and (name in "xX" or not name.isalnum())):
            match = None
        else:
            category, content = name, match.group(2).strip()
    if match is None and not any(p.startswith("#") for p in content.split()):
        return None
    context = None
    if content.endswith(")") and "(" in content:
        start = content.rfind("(")
        context = content[start + 1:-1].strip()
        content = content[:start].strip()
    tags = [t for part in content.split() if part.startswith("#")
            for t in part.split("#") if t]
    return {"category": category, "content": content, "tags": tags, "context": context or None}


def _relation(content: str) -> tuple[str, str, str | None] | None:
    """basic-memory's explicit relation: ``type [[Target]] (context)`` in a list item."""
    if LINKS_TO_DIRECTIVE.search(content):
        return None
    before, sep, rest = content.partition("[[")
    label = before.strip()
    if not sep or not label:
        return None
    if label[0] in "'\"" and label.endswith(label[0]) and len(label) > 1:
        label = label[1:-1].strip()
    elif any(c.isspace() for c in label):
        return None
    target, sep, after = rest.partition("]]")
    if not sep or not label or not target.strip():
        return None
    after = after.strip()
    if after and not (after.startswith("(") and after.endswith(")")):
        return None
    return label, target.strip(), after[1:-1].strip() or None if after else None


class _Reader:
    def __init__(self, note: _Note) -> None:
        self.note = note
        self.section: str | None = None
        self.prose: list[str] = []
        self.prose_line = 0

    def meta(self, own: dict[str, Any]) -> dict[str, Any]:
        """The note's frontmatter (a key named like one of a fact's own as ``note_<key>``),
        then where the fact is, then its own keys."""
        base = {("note_" + k if k in OWN_KEYS else k): v
                for k, v in self.note.frontmatter.items() if k != "title"}
        base.update({"note": self.note.title, "file": self.note.rel})
        if self.section is not None:
            base["section"] = self.section
        return {**base, **{k: v for k, v in own.items() if v is not None}}

    def fact(self, text: str, line: int, own: dict[str, Any]) -> None:
        where = f"{self.note.rel}:{line}"
        self.note.facts.append(Fact(where, text, where, self.meta(own), self.note.mtime,
                                    self.note.mtime))

    def flush(self) -> None:
        text = "\n".join(self.prose).strip()
        if text:
            self.fact(text, self.prose_line, {"kind": "section"})
        self.prose, self.prose_line = [], 0

    def keep(self, line: str, n: int) -> None:
        if not self.prose:
            if not line.strip():
                return
            self.prose_line = n
        self.prose.append(line)

    def links(self, text: str, n: int) -> None:
        for target in WIKI.findall(text):
            if target.strip():
                self.note.relations.append((LINKS_TO, target.strip(), f"{self.note.rel}:{n}"))

    def body(self, lines: list[str], first: int) -> None:
        fenced = False
        for i in range(first, len(lines)):
            line, n = lines[i], i + 1
            if FENCE.match(line):
                fenced = not fenced
                self.keep(line, n)
                continue
            if fenced or line.lstrip().startswith(">"):
                self.keep(line, n)
                continue
            heading = HEADING.match(line)
            if heading:
                self.flush()
                self.section = heading.group(2)
                continue
            item = LIST_ITEM.match(line)
            content = (item.group(1) if item else line).strip()
            observation = _observation(content)
            relation = _relation(content) if item else None
            if relation is not None:
                label, target, _ = relation
                self.note.relations.append((label, target, f"{self.note.rel}:{n}"))
            else:
                self.links(content, n)
            if observation is not None:
                self.fact(observation["content"], n,
                          {k: v for k, v in observation.items() if k != "content"})
            elif relation is None:
                self.keep(line, n)
        self.flush()


def _read_note(root: Path, file: Path) -> _Note:
    rel = file.relative_to(root).as_posix() if file != root else file.name
    try:
        data = file.read_bytes()
        mtime = file.stat().st_mtime
    except OSError as exc:
        raise CorruptInput(rel, f"cannot be read ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise CorruptInput(f"{rel}:{line}", f"not UTF-8 text (byte {exc.start})") from None
    lines = text.removeprefix("\ufeff").splitlines()
    frontmatter, first = read_frontmatter(lines, rel)
    title = frontmatter.get("title")
    if not isinstance(title, str) or not title.strip():
        title = file.stem
    note = _Note(rel, title.strip(), frontmatter, mtime)
    _Reader(note).body(lines, first)
    return note


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.md") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(path).parts))


def _hub_key(name: str) -> str:
    return f"basic-memory-note:{name.strip().lower()}"


def read(path: Path) -> Iterator[Record]:
    """Every note's hub and facts in file order, then the links between notes."""
    root = path if path.is_dir() else path.parent
    names: dict[str, str] = {}  # title, permalink, path and file name (lowercased) -> title
    relations: list[tuple[str, str, str, str]] = []  # (from title, type, target, where)
    for file in _files(path):
        note = _read_note(root, file)
        attributes = {**note.frontmatter, "file": note.rel}
        yield Entity(_hub_key(note.title), note.title, note.rel, attributes)
        for fact in note.facts:
            yield fact
            yield Link(fact.key, _hub_key(note.title), ABOUT, fact.where)
        stem = note.rel.removesuffix(".md")
        aliases = [note.title, stem, Path(stem).name, str(note.frontmatter.get("permalink", ""))]
        for alias in aliases:
            if alias:
                names.setdefault(alias.lower(), note.title)
        relations.extend((note.title, label, target, where)
                         for label, target, where in note.relations)
    unresolved: set[str] = set()
    for source, label, target, where in relations:
        name = target.split("|", 1)[0].split("#", 1)[0].strip()
        title = names.get(name.lower()) or names.get(name.lower().removesuffix(".md"))
        if title is None:
            title = name
            if name.lower() not in unresolved:
                unresolved.add(name.lower())
                yield Entity(_hub_key(name), name, where, {"unresolved_link": True})
        yield Link(_hub_key(source), _hub_key(title), label, where)

"""Claude Code's own memory: CLAUDE.md files, rules, and the auto-memory notes.

PATH is one file, or a folder searched for what Claude Code loads (``.git`` and
``node_modules`` left out):

- instruction files: ``CLAUDE.md`` and ``CLAUDE.local.md`` anywhere (a project, its
  ``.claude/``, or ``~/.claude/``), and ``*.md`` in a ``rules`` folder of a ``.claude`` folder.
  One fact per list item (its continuation lines joined), per paragraph and per fenced code
  block, with the file and the section (its headings, ``Build > Tests``) as metadata. A line
  that only imports another file (``@docs/git.md``) is skipped with that reason.
- auto-memory notes: ``*.md`` in a ``memory`` folder (``~/.claude/projects/<project>/memory/``).
  Each note holds one memory under a frontmatter (``name``, ``description``,
  ``metadata.type``: user, feedback, project or reference; ``modified`` when present): the body
  is one fact (split into its items and paragraphs when over the fact cap), with the name,
  description, type, project folder and file as metadata, dated by ``modified`` or the file's
  modification time. ``[[other-note]]`` becomes a ``related_to`` edge to that note's fact.
  The ``MEMORY.md`` index is read for its titles (kept on the note they point to); an index
  line that points at no note file is a fact itself.

Files that are not UTF-8, and frontmatter that is not a YAML mapping closed by ``---``, refuse
the whole import naming the file and line.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from velesmem import limits
from velesmem.importers.frontmatter import frontmatter as read_frontmatter
from velesmem.importers.records import CorruptInput, Fact, Link, Record, Skipped

INSTRUCTION_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
INDEX = "MEMORY.md"
MEMORY_DIR = "memory"
RELATED = "related_to"
SKIP_DIRS = frozenset({".git", "node_modules"})
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
IMPORT_LINE = re.compile(r"^@\S+$")
POINTER = re.compile(r"^\[([^\]]+)\]\(([^)\s]+\.md)\)\s*(?:[—–:-]+\s*(.*))?$")
WIKI = re.compile(r"\[\[([^\[\]|#]+)(?:[|#][^\[\]]*)?\]\]")
COMMENT_OPEN, COMMENT_CLOSE = "<!--", "-->"


@dataclass
class Block:
    """One item, paragraph or code block of a Markdown body: its first line and text."""

    line: int
    text: str
    section: str | None
    kind: str  # item, paragraph, code


@dataclass
class _Body:
    blocks: list[Block] = field(default_factory=list)
    imports: list[int] = field(default_factory=list)  # lines that only @import a file


def _decoded(file: Path, rel: str) -> tuple[list[str], float]:
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
    return text.removeprefix("\ufeff").splitlines(), mtime


def blocks(lines: list[str], first: int = 0) -> _Body:
    """The items, paragraphs and fenced code blocks of a Markdown body, with their sections;
    HTML comments left out (Claude Code strips them too)."""
    body = _Body()
    headings: list[tuple[int, str]] = []
    current: Block | None = None
    indent = 0
    fenced = False
    comment = False

    def section() -> str | None:
        return " > ".join(h for _, h in headings) or None

    def close() -> None:
        nonlocal current
        if current is not None and current.text.strip():
            body.blocks.append(current)
        current = None

    for i in range(first, len(lines)):
        line, n = lines[i], i + 1
        if fenced:
            assert current is not None
            if FENCE.match(line):
                fenced = False
                close()
            else:
                current.text += ("\n" if current.text else "") + line
            continue
        if comment:
            comment = COMMENT_CLOSE not in line
            continue
        stripped = line.strip()
        if stripped.startswith(COMMENT_OPEN):
            close()
            comment = COMMENT_CLOSE not in stripped[len(COMMENT_OPEN):]
            continue
        if FENCE.match(line):
            close()
            current, fenced = Block(n, "", section(), "code"), True
            continue
        heading = HEADING.match(line)
        if heading:
            close()
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
            continue
        if not stripped:
            close()
            continue
        if IMPORT_LINE.match(stripped):
            close()
            body.imports.append(n)
            continue
        item = ITEM.match(line)
        if item:
            close()
            current, indent = Block(n, item.group(2).strip(), section(), "item"), len(item.group(1))
            continue
        if current is not None and (current.kind == "paragraph" or
                                    len(line) - len(line.lstrip()) > indent):
            current.text += " " + stripped
            continue
        close()
        current, indent = Block(n, stripped, section(), "paragraph"), 0
    if fenced:
        assert current is not None
        raise CorruptInput(f"?:{current.line}", "a code block is opened and never closed")
    close()
    return body


def _fits(text: str) -> bool:
    return len(text.strip().encode("utf-8", "surrogatepass")) <= limits.MAX_EMBEDDABLE_TEXT_BYTES


def _instructions(file: Path, rel: str) -> Iterator[Record]:
    lines, mtime = _decoded(file, rel)
    try:
        body = blocks(lines)
    except CorruptInput as exc:
        raise CorruptInput(exc.where.replace("?", rel, 1), exc.problem) from None
    for n in body.imports:
        yield Skipped(f"{rel}:{n}", "it only imports another file (@path); import that file")
    for b in body.blocks:
        where = f"{rel}:{b.line}"
        meta: dict[str, Any] = {"file": rel}
        if b.section is not None:
            meta["section"] = b.section
        if b.kind == "code":
            meta["block"] = "code"
        yield Fact(where, b.text, where, meta, mtime, mtime)


def _modified(value: object, mtime: float) -> float:
    """A note's ``modified`` stamp (epoch seconds or milliseconds, or an ISO date) as Unix
    seconds; the file's modification time when it has none that parses."""
    if isinstance(value, bool):
        return mtime
    if isinstance(value, int | float):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            stamp = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return mtime
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=_dt.UTC)
        return stamp.timestamp()
    return mtime


def _note_key(folder: str, name: str) -> str:
    return f"memory:{folder}/{name.strip().lower()}"


def _project(file: Path) -> str | None:
    """The project folder an auto-memory folder belongs to (``projects/<project>/memory``)."""
    parent = file.parent.parent
    return parent.name if parent.parent.name == "projects" else None


def _notes(folder: Path, files: list[Path], root: Path) -> Iterator[Record]:
    folder_rel = _rel(folder, root)
    titles: dict[str, str] = {}  # note file name -> its title in the index
    index = folder / INDEX
    pointers: list[tuple[str, Block]] = []
    if index in files:
        rel = _rel(index, root)
        lines, mtime = _decoded(index, rel)
        fm, first = read_frontmatter(lines, rel)
        for b in blocks(lines, first).blocks:
            pointer = POINTER.match(b.text) if b.kind == "item" else None
            if pointer and (folder / pointer.group(2)).is_file():
                titles[Path(pointer.group(2)).name] = pointer.group(1).strip()
                continue
            pointers.append((rel, b))
        for rel_, b in pointers:
            where = f"{rel_}:{b.line}"
            meta: dict[str, Any] = {"file": rel_, "memory_index": True}
            if b.section is not None:
                meta["section"] = b.section
            project = _project(index)
            if project is not None:
                meta["claude_project"] = project
            yield Fact(where, b.text, where, meta, mtime, mtime)
    links: list[Link] = []
    for file in files:
        if file == index:
            continue
        rel = _rel(file, root)
        lines, mtime = _decoded(file, rel)
        fm, first = read_frontmatter(lines, rel)
        given = fm.get("metadata")
        nested: dict[str, Any] = given if isinstance(given, dict) else {}
        named = fm.get("name")
        name = named.strip() if isinstance(named, str) and named.strip() else file.stem
        meta = {"file": rel, "memory_name": name}
        for key, value in (("description", fm.get("description")),
                           ("memory_type", nested.get("type", fm.get("type"))),
                           ("title", titles.get(file.name)),
                           ("claude_project", _project(file))):
            if value is not None:
                meta[key] = value
        extra = {k: v for k, v in fm.items() if k not in ("name", "description", "metadata",
                                                          "type", "modified")}
        extra.update({k: v for k, v in nested.items() if k != "type"})
        meta = {**extra, **meta}
        when = _modified(fm.get("modified", nested.get("modified")), mtime)
        key = _note_key(folder_rel, name)
        text = "\n".join(lines[first:]).strip()
        try:
            body = blocks(lines, first)
        except CorruptInput as exc:
            raise CorruptInput(exc.where.replace("?", rel, 1), exc.problem) from None
        first_line = body.blocks[0].line if body.blocks else first + 1
        if not body.blocks:
            yield Skipped(rel, "the note has no body")
            continue
        if _fits(text):
            yield Fact(key, text, f"{rel}:{first_line}", meta, when, when)
        else:  # one fact per item and paragraph, the first standing for the note
            for i, b in enumerate(body.blocks):
                part = key if i == 0 else f"{key}#{b.line}"
                yield Fact(part, b.text, f"{rel}:{b.line}",
                           {**meta, **({"section": b.section} if b.section else {})}, when, when)
                if i:
                    links.append(Link(part, key, "part_of", f"{rel}:{b.line}"))
        for target in dict.fromkeys(WIKI.findall(text)):
            links.append(Link(key, _note_key(folder_rel, target), RELATED,
                              f"{rel}:{first_line}"))
    yield from links


def _rel(file: Path, root: Path) -> str:
    return file.relative_to(root).as_posix() if file != root else file.name


def _is_rules(file: Path, root: Path) -> bool:
    parent = file.parent
    return parent.name == "rules" and (parent.parent.name == ".claude"
                                       or (parent.parent == root and root.name == ".claude"))


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        found.extend(Path(top) / n for n in sorted(names) if n.endswith(".md"))
    return found


def read(path: Path) -> Iterator[Record]:
    """The facts (and links between auto-memory notes) of one file or of a folder."""
    root = path if path.is_dir() else path.parent
    files = _walk(path) if path.is_dir() else [path]
    notes: dict[Path, list[Path]] = {}
    for file in files:
        if file.parent.name == MEMORY_DIR:
            notes.setdefault(file.parent, []).append(file)
        elif file.name in INSTRUCTION_NAMES or _is_rules(file, root) or file == path:
            yield from _instructions(file, _rel(file, root))
    for folder, members in notes.items():
        yield from _notes(folder, members, root)

"""Non-destructive edits of one entry in a JSON-with-comments config (Zed, opencode).

Zed's ``settings.json`` and opencode's ``opencode.json(c)`` allow ``//`` and ``/* */`` comments
and trailing commas, and people keep notes in them. A JSON rewrite would drop those, so the edit
is textual, like the Codex TOML: the file is parsed into values *with their spans*, our member's
text is replaced, inserted or cut, and the result is re-parsed to prove that every other value
is unchanged before anything is written. Same backup / atomic-write / refusal rules as
``velesmem.clients.files``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from velesmem.clients.files import UTF8_BOM, ConfigRefused, atomic_write, backup, read_bytes

INDENT = "  "


class JsoncError(ValueError):
    """The text is not JSON-with-comments."""


@dataclass
class Node:
    """A parsed value and where its text starts and ends; objects keep their members."""

    value: Any
    start: int
    end: int
    members: list[Member] = field(default_factory=list)  # objects only, in file order
    close: int = -1  # objects only: the offset of the closing brace


@dataclass
class Member:
    """``"key": value`` inside an object: the key's start and the value's node."""

    key: str
    key_start: int
    node: Node


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.pos) + 1
        return JsoncError(f"{what} at line {line}")

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            ch = text[self.pos]
            if ch in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end")
        ch = self.text[self.pos]
        if ch == "{":
            return self.object()
        if ch == "[":
            return self.array()
        if ch == '"':
            start = self.pos
            return Node(self.string(), start, self.pos)
        return self.scalar()

    def string(self) -> str:
        decoder = json.JSONDecoder()
        try:
            value, end = decoder.raw_decode(self.text, self.pos)
        except json.JSONDecodeError:
            raise self.fail("bad string") from None
        self.pos = end
        return cast(str, value)

    def scalar(self) -> Node:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",]}/ \t\r\n":
            self.pos += 1
        raw = self.text[start:self.pos]
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise self.fail(f"unexpected {raw[:20]!r}") from None
        if isinstance(value, (dict, list, str)):
            raise self.fail(f"unexpected {raw[:20]!r}")
        return Node(value, start, self.pos)

    def object(self) -> Node:
        start = self.pos
        self.pos += 1
        node = Node({}, start, -1)
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                node.close = self.pos
                self.pos += 1
                node.end = self.pos
                return node
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a quoted key")
            key_start = self.pos
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            child = self.value()
            node.value[key] = child.value
            node.members.append(Member(key, key_start, child))
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")

    def array(self) -> Node:
        start = self.pos
        self.pos += 1
        items: list[Any] = []
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return Node(items, start, self.pos)
            items.append(self.value().value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The root node of a JSONC document (an empty document is an empty object)."""
    parser = _Parser(text)
    parser.skip()
    if parser.pos >= len(text):
        return Node({}, len(text), len(text))
    root = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("text after the end")
    return root


def loads(text: str) -> Any:
    """The value of a JSONC document."""
    return parse(text).value


# --- editing ----------------------------------------------------------------------------------

def _line_indent(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: str) -> str:
    """JSON text for ``value``, its continuation lines indented under ``indent``."""
    return json.dumps(value, indent=len(INDENT), ensure_ascii=False).replace("\n", "\n" + indent)


def _member_text(key: str, value: Any, indent: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent)}"


def _first_on_own_line(text: str, node: Node) -> bool:
    return bool(node.members) and "\n" in text[node.start:node.members[0].key_start]


def _child_indent(text: str, node: Node) -> str:
    """The indentation of ``node``'s members: its first member's when that starts a line, else
    one step past the object's own."""
    if _first_on_own_line(text, node):
        return _line_indent(text, node.members[0].key_start)
    return _line_indent(text, node.start) + INDENT


def _insert_member(text: str, node: Node, key: str, value: Any) -> str:
    """``node`` (an object) gains ``key: value`` as its first member, on a line of its own."""
    indent = _child_indent(text, node)
    member = _member_text(key, value, indent)
    open_at = node.start + 1
    if node.members:  # ours, a comma, then the old first member (moved to a line of its own)
        rest = text[open_at:] if _first_on_own_line(text, node) else "\n" + indent + text[open_at:].lstrip(" ")
        return text[:open_at] + "\n" + indent + member + "," + rest
    return text[:open_at] + "\n" + indent + member + "\n" + _line_indent(text, node.start) + text[open_at:]


def _remove_member(text: str, node: Node, index: int) -> str:
    """Cut ``node.members[index]`` with its comma and, when it had it to itself, its line."""
    member = node.members[index]
    start, end = member.key_start, member.node.end
    parser = _Parser(text)
    parser.pos = end
    parser.skip()
    if text.startswith(",", parser.pos):
        end = parser.pos + 1
    elif index > 0:  # the last member: drop the comma that followed the previous one
        prev_end = node.members[index - 1].node.end
        parser.pos = prev_end
        parser.skip()
        if text.startswith(",", parser.pos) and parser.pos < start:
            text = text[: parser.pos] + " " + text[parser.pos + 1:]
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:start].strip():
        start = line_start  # the member began its line: take the indentation too
        line_end = text.find("\n", end)
        if line_end >= 0 and not text[end:line_end].strip():
            end = line_end + 1  # ... and ended it: take the newline
    return text[:start] + text[end:]


@dataclass(frozen=True)
class Location:
    """Our entry: ``data[container][name]`` in a JSONC file."""

    container: str
    name: str


def _entry(data: Any, where: Location) -> Any:
    servers = data.get(where.container) if isinstance(data, dict) else None
    return servers.get(where.name) if isinstance(servers, dict) else None


def _without(data: Any, where: Location) -> Any:
    rest = copy.deepcopy(data)
    servers = rest.get(where.container) if isinstance(rest, dict) else None
    if isinstance(servers, dict):
        servers.pop(where.name, None)
        if not servers:
            del rest[where.container]
    return rest


def _decode(path: Path, raw: bytes) -> tuple[str, bool]:
    bom = raw.startswith(UTF8_BOM)
    try:
        return raw[len(UTF8_BOM):].decode("utf-8") if bom else raw.decode("utf-8"), bom
    except UnicodeDecodeError:
        raise ConfigRefused(f"{path} is not UTF-8 text; left untouched") from None


def _root(path: Path, text: str) -> Node:
    try:
        root = parse(text)
    except JsoncError as exc:
        raise ConfigRefused(f"{path} is not valid JSON with comments ({exc}); left untouched — fix it "
                            "by hand") from None
    if not isinstance(root.value, dict):
        raise ConfigRefused(f"{path} holds JSON but not an object; left untouched — fix it by hand")
    return root


def _container(path: Path, root: Node, where: Location) -> Node | None:
    member = next((m for m in root.members if m.key == where.container), None)
    if member is None:
        return None
    if not isinstance(member.node.value, dict):
        raise ConfigRefused(f"{path}: {where.container!r} is not an object; left untouched — fix it by hand")
    if sum(1 for m in root.members if m.key == where.container) > 1:
        raise ConfigRefused(f"{path}: {where.container!r} appears twice; left untouched — fix it by hand")
    return member.node


def get_jsonc_entry(path: Path, where: Location) -> Any:
    """Our entry (None when the file or entry is absent); ConfigRefused when unreadable."""
    raw = read_bytes(path)
    if raw is None:
        return None
    text, _ = _decode(path, raw)
    root = _root(path, text)
    _container(path, root, where)
    return _entry(root.value, where)


def _commit(path: Path, old: Any, text: str, bom: bool, where: Location, expected: Any,
            clock: Callable[[], float]) -> Path:
    """Re-parse the edited text, prove only our entry changed, then back up and write."""
    try:
        new = loads(text)
    except JsoncError:
        new = None
    if new is None or _without(new, where) != _without(old, where) or _entry(new, where) != expected:
        raise ConfigRefused(f"{path}: editing {where.container}.{where.name} would change other keys; "
                            "edit it by hand")
    saved = backup(path, clock)
    atomic_write(path, (UTF8_BOM if bom else b"") + text.encode("utf-8"))
    return saved


def upsert_jsonc_entry(path: Path, where: Location, entry: dict[str, Any], *,
                       envelope: dict[str, Any] | None = None,
                       clock: Callable[[], float] = time.time) -> tuple[str, Path | None]:
    """Make ``data[container][name]`` equal ``entry``; (added|updated|unchanged, backup or None).

    A new file starts with ``envelope``'s keys (opencode's ``$schema``)."""
    raw = read_bytes(path)
    if raw is None:
        data = {**(envelope or {}), where.container: {where.name: entry}}
        atomic_write(path, (json.dumps(data, indent=len(INDENT), ensure_ascii=False) + "\n").encode("utf-8"))
        return "added", None
    text, bom = _decode(path, raw)
    root = _root(path, text)
    container = _container(path, root, where)
    previous = _entry(root.value, where)
    if previous == entry:
        return "unchanged", None
    if root.start == len(text):  # an empty file: write a fresh object
        new_text = json.dumps({where.container: {where.name: entry}}, indent=len(INDENT)) + "\n"
    elif container is None:
        new_text = _insert_member(text, root, where.container, {where.name: entry})
    else:
        ours = [i for i, m in enumerate(container.members) if m.key == where.name]
        if len(ours) > 1:
            raise ConfigRefused(f"{path}: {where.name!r} appears twice in {where.container!r}; edit it by hand")
        if ours:
            node = container.members[ours[0]].node
            indent = _line_indent(text, container.members[ours[0]].key_start)
            new_text = text[: node.start] + _render(entry, indent) + text[node.end:]
        else:
            new_text = _insert_member(text, container, where.name, entry)
    saved = _commit(path, root.value, new_text, bom, where, entry, clock)
    return ("added" if previous is None else "updated"), saved


def remove_jsonc_entry(path: Path, where: Location,
                       clock: Callable[[], float] = time.time) -> tuple[str, Path | None]:
    """Delete ``data[container][name]`` only; (removed|absent, backup or None)."""
    raw = read_bytes(path)
    if raw is None:
        return "absent", None
    text, bom = _decode(path, raw)
    root = _root(path, text)
    container = _container(path, root, where)
    if container is None or _entry(root.value, where) is None:
        return "absent", None
    index = next(i for i, m in enumerate(container.members) if m.key == where.name)
    new_text = _remove_member(text, container, index)
    return "removed", _commit(path, root.value, new_text, bom, where, None, clock)

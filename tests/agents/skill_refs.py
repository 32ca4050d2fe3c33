"""Read the tool references out of a skill text, by the notation the skills state:

- `` `tool(param=…, param=…)` `` is a call: the tool and each parameter name must exist;
- `` `tool → field, field` `` (or a call followed by ``→``) names fields of that tool's result;
- `` `name` `` bare (letters, digits, ``_``, dots and ``[]``) must be a tool, a parameter or a
  result field somewhere in the live surface;
- `` `name=…` `` names a parameter of some tool;
- anything else in backticks (``"high"``, ``PR #42``, ``ctx://source/…``) is a literal, unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

SPAN = re.compile(r"`([^`\n]+)`")
CALL = re.compile(r"^([a-z_][a-z0-9_]*)\((.*)\)$", re.S)
PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$")
ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\[\]]*)=")
ARROW = "→"
ELLIPSIS = ("…", "...")


@dataclass(frozen=True)
class Ref:
    """One checked mention: ``kind`` is tool, param (of ``tool``), result (of ``tool``), name
    (bare, anywhere) or malformed."""

    kind: str
    path: str
    tool: str | None
    line: int
    span: str


def normalize(path: str) -> str:
    return path.replace("[]", "")


def split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments of a call (brackets and quotes respected)."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def references(text: str) -> Iterator[Ref]:
    """Every checked mention in ``text`` (front matter included; it holds no backticks)."""
    for number, line in enumerate(text.splitlines(), 1):
        for span in SPAN.findall(line):
            left, arrow, right = span.partition(ARROW)
            left = left.strip()
            if arrow and not (CALL.match(left) or PATH.match(left)):
                continue  # e.g. the notation's own `<tool> → <field>`: a literal
            tool: str | None = None
            call = CALL.match(left)
            if call:
                tool = call.group(1)
                yield Ref("tool", tool, None, number, span)
                for arg in split_args(call.group(2)):
                    if arg in ELLIPSIS:
                        continue
                    name, eq, _ = arg.partition("=")
                    if not eq or not PATH.match(name.strip()):
                        yield Ref("malformed", arg, tool, number, span)
                    else:
                        yield Ref("param", normalize(name.strip()), tool, number, span)
            elif arrow:
                tool = left
                yield Ref("tool", tool, None, number, span)
            elif PATH.match(left):
                yield Ref("name", normalize(left), None, number, span)
            elif ASSIGN.match(left):
                yield Ref("name", normalize(ASSIGN.match(left).group(1)), None, number, span)
            if arrow:
                for field in right.split(","):
                    field = field.strip()
                    if PATH.match(field):
                        yield Ref("result", normalize(field), tool, number, span)
                    else:
                        yield Ref("malformed", field, tool, number, span)


def param_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every parameter path of an input schema: ``working``, ``working.goal``, ``links.target``."""
    out: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}{name}"
        out.add(path)
        out |= _nested(sub, path + ".")
    return out


def _nested(schema: dict[str, Any], prefix: str) -> set[str]:
    out: set[str] = set()
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out |= _nested(schema[key], prefix)
    for alt in schema.get("anyOf") or []:
        out |= _nested(alt, prefix)
    if schema.get("properties"):
        out |= param_paths(schema, prefix)
    return out


def result_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a result (list elements are transparent)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}{key}"
            out.add(path)
            out |= result_paths(sub, path + ".")
    elif isinstance(value, list):
        for item in value:
            out |= result_paths(item, prefix)
    return out


@dataclass
class Surface:
    """The live tool surface: each tool's parameter paths and observed result paths."""

    params: dict[str, set[str]]
    results: dict[str, set[str]]

    def names(self) -> set[str]:
        paths = [p for group in (*self.params.values(), *self.results.values()) for p in group]
        return set(self.params) | {part for p in paths for part in p.split(".")}

    def _all_paths(self) -> Iterable[str]:
        for group in (*self.params.values(), *self.results.values()):
            yield from group

    def problems(self, refs: Iterable[Ref]) -> list[str]:
        """One message per reference the live surface does not have."""
        names = self.names()
        bad = []
        for ref in refs:
            where = f"line {ref.line} `{ref.span}`"
            if ref.kind == "malformed":
                bad.append(f"{where}: {ref.path!r} is neither param=value nor a field path")
            elif ref.kind == "tool" and ref.path not in self.params:
                bad.append(f"{where}: no tool {ref.path!r}")
            elif ref.kind == "param" and ref.tool in self.params \
                    and ref.path not in self.params[ref.tool]:
                bad.append(f"{where}: {ref.tool} has no parameter {ref.path!r}")
            elif ref.kind == "result" and ref.tool in self.params \
                    and ref.path not in self.results.get(ref.tool, set()):
                bad.append(f"{where}: {ref.tool}'s result has no field {ref.path!r} "
                           f"(observed: {sorted(self.results.get(ref.tool, set()))})")
            elif ref.kind == "name":
                known = (ref.path in names if "." not in ref.path else
                         any(p == ref.path or p.endswith("." + ref.path) for p in self._all_paths()))
                if not known:
                    bad.append(f"{where}: {ref.path!r} is no tool, parameter or result field")
        return bad

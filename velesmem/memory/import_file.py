"""Check a whole export file before anything is written (``velesdb-memory import``).

Everything that can be checked without the store is checked here, line by line while the file
streams: each line's length (a line longer than the cap is refused as soon as the cap is passed,
before it is parsed or held whole), UTF-8, JSON (deep nesting is a worded error), the fields and
their types, a user fact's id against the hash of its content, the content and metadata caps,
reserved metadata keys (a user fact may carry ``_veles_date`` and ``_veles_author``, the author
its token recorded), relation labels. A repeated line counts once; two lines giving one id
different facts are refused. Edges whose ends are not in the file are listed for the store to
answer. The first refusal names its line, and nothing is written.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from velesmem import limits, validate
from velesmem.errors import InvalidInput
from velesmem.ids import fact_id

READ_CHUNK = 1 << 20  # bytes of a line read at once


@dataclass(frozen=True)
class FactLine:
    """A fact line, checked: ``kind`` None is a user fact; ``metadata_json`` is canonical."""

    line: int
    id: int
    content: str
    metadata_json: str
    kind: str | None
    confidence: float
    successes: int
    failures: int
    created_at: float
    updated_at: float
    expires_at: float | None


@dataclass(frozen=True)
class EdgeLine:
    line: int
    src: int
    dst: int
    relation: str


@dataclass
class CheckedFile:
    """What the file holds once checked: distinct facts and edges, in file order."""

    facts: list[FactLine] = field(default_factory=list)
    edges: list[EdgeLine] = field(default_factory=list)
    repeated: int = 0  # lines that repeated an earlier one exactly (counted once)
    outside: set[int] = field(default_factory=set)  # edge ends that no fact line names


class BadLine(Exception):
    """Why one line is refused (the caller adds the file and line number)."""


def check_file(path: Path, *,
               max_line_bytes: int = limits.MAX_IMPORT_LINE_BYTES) -> CheckedFile:
    """Read and check every line of ``path``; InvalidInput naming the first bad line."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}; nothing was imported") from None
    with fh:
        return check_stream(fh, str(path), max_line_bytes=max_line_bytes)


def check_stream(fh: BinaryIO, name: str, *,
                 max_line_bytes: int = limits.MAX_IMPORT_LINE_BYTES) -> CheckedFile:
    """``check_file`` over an open binary stream called ``name`` in messages."""
    out = CheckedFile()
    facts: dict[int, FactLine] = {}
    edges: set[tuple[int, int, str]] = set()
    n = 0
    while True:
        n += 1
        raw = read_line(fh, max_line_bytes)
        if raw is None:
            raise InvalidInput(f"{name}:{n}: the line is longer than {max_line_bytes:,} bytes "
                               "(import --max-line-bytes); it was not read further; nothing "
                               "was imported")
        if not raw:
            break
        try:
            item = _parse(raw)
        except BadLine as exc:
            raise InvalidInput(f"{name}:{n}: {exc}; nothing was imported") from None
        if item is None:
            continue
        if isinstance(item, EdgeLine):
            triple = (item.src, item.dst, item.relation)
            if triple in edges:
                out.repeated += 1
                continue
            edges.add(triple)
            out.edges.append(EdgeLine(n, *triple))
            continue
        fact = FactLine(n, *item)
        earlier = facts.get(fact.id)
        if earlier is not None:
            if _same(earlier, fact):
                out.repeated += 1
                continue
            raise InvalidInput(f"{name}:{n}: id {fact.id} was already given another fact on "
                               f"line {earlier.line}; nothing was imported")
        facts[fact.id] = fact
        out.facts.append(fact)
    out.outside = {end for e in out.edges for end in (e.src, e.dst)} - set(facts)
    return out


def read_line(fh: BinaryIO, cap: int) -> bytes | None:
    """The next line (b"" at the end), or None once it passes ``cap`` bytes before its end:
    read in chunks, so a refused line is never held whole and never read past the cap."""
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = fh.readline(min(READ_CHUNK, cap + 1 - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if size > cap:
            return None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _same(a: FactLine, b: FactLine) -> bool:
    return replace(a, line=0) == replace(b, line=0)


def _parse(raw: bytes) -> EdgeLine | tuple[Any, ...] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadLine(f"not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except RecursionError:
        raise BadLine("JSON nested too deeply to read") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        raise BadLine(f"not JSON ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(obj, dict):
        raise BadLine("not a JSON object")
    kind = obj.get("type")
    if kind == "fact":
        return _fact(obj)
    if kind == "edge":
        src, dst = _u64(obj, "from"), _u64(obj, "to")
        try:
            relation = validate.relation(obj.get("relation"))
        except InvalidInput as exc:
            raise BadLine(exc.message) from None
        if src == dst:
            raise BadLine("the edge points a fact at itself (from = to)")
        return EdgeLine(0, src, dst, relation)
    raise BadLine(f"type must be 'fact' or 'edge', got {kind!r}")


def _fact(obj: dict[str, Any]) -> tuple[Any, ...]:
    """The fields of a FactLine after its line number."""
    fid = _u64(obj, "id")
    kind = obj.get("kind")
    if kind is not None and (not isinstance(kind, str) or not kind.strip()
                             or len(kind.encode("utf-8", "surrogatepass"))
                             > limits.MAX_FIELD_NAME_BYTES):
        raise BadLine(f"kind must be null (a user fact) or a name of at most "
                      f"{limits.MAX_FIELD_NAME_BYTES} bytes")
    content = obj.get("content")
    try:
        if kind is None:
            content = validate.fact_text(content)
            if fact_id(content) != fid:
                raise BadLine(f"id {fid} is not the hash of its content (edited?)")
        else:
            content = validate.text(content, "content", limits.MAX_INTERNAL_BYTES,
                                    allow_empty=True)
        metadata_json = _metadata(obj.get("metadata", {}), user=kind is None)
    except InvalidInput as exc:
        raise BadLine(exc.message) from None
    confidence = _number(obj, "confidence")
    if not 0.0 <= confidence <= 1.0:
        raise BadLine("confidence must be between 0 and 1")
    expires = obj.get("expires_at")
    return (fid, content, metadata_json, kind, confidence, _count(obj, "successes"),
            _count(obj, "failures"), _number(obj, "created_at"), _number(obj, "updated_at"),
            None if expires is None else _number(obj, "expires_at"))


def _metadata(value: object, *, user: bool) -> str:
    """Canonical JSON of a fact's metadata, kept verbatim. A user fact's reserved keys are only
    ``_veles_date`` and ``_veles_author`` (a token name, as the daemon records it)."""
    if not isinstance(value, dict):
        raise BadLine(f"metadata must be an object, got {type(value).__name__}")
    cap = limits.MAX_METADATA_BYTES if user else limits.MAX_INTERNAL_BYTES
    if user:
        for key in value:
            if validate.is_reserved(key) and key != validate.AUTHOR_KEY:
                raise BadLine(f"metadata key {key!r} is reserved (content and _veles_* keys "
                              f"other than {validate.DATE_KEY} and {validate.AUTHOR_KEY} are "
                              "refused)")
        author = value.get(validate.AUTHOR_KEY)
        if validate.AUTHOR_KEY in value and (
                not isinstance(author, str) or not author
                or len(author.encode("utf-8", "surrogatepass")) > limits.MAX_AUTH_TOKEN_NAME_BYTES):
            raise BadLine(f"metadata {validate.AUTHOR_KEY} must be a token name of 1 to "
                          f"{limits.MAX_AUTH_TOKEN_NAME_BYTES} bytes")
    try:
        encoded = validate.dumps(value)
    except RecursionError:
        raise BadLine("metadata is nested too deeply") from None
    except (TypeError, ValueError) as exc:
        raise BadLine(f"metadata is not JSON-serializable: {exc}") from None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise BadLine(f"metadata is {size} bytes serialized, over the {cap}-byte cap")
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise BadLine("metadata is not valid Unicode (lone surrogate)") from None
    return encoded


def _u64(obj: dict[str, Any], name: str) -> int:
    value = obj.get(f"{name}_str", obj.get(name))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadLine(f"{name} must be a u64 (number or decimal string)")
    try:
        number = int(value)
    except ValueError:
        raise BadLine(f"{name} {str(value)[:40]!r} is not a decimal id") from None
    if not 0 <= number < 1 << 64:
        raise BadLine(f"{name} {number} is not a u64")
    return number


def _number(obj: dict[str, Any], name: str) -> float:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadLine(f"{name} must be a finite number")
    return float(value)


def _count(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadLine(f"{name} must be a non-negative integer")
    return value

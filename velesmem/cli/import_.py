"""``velesdb-memory import memories.jsonl``: restore an export into the configured store.

The inverse of ``export``: every fact line is remembered again through the memory service
(re-embedded by the running embedder, so its id stays the hash of its text), then its learned
confidence, success and failure counts, creation and update times and expiry are restored as
exported; internal scaffolding (in ``--include-internal`` exports) is put back as it was; then
every edge is related again (the autograph is off meanwhile: the export's own hubs and edges
come back, nothing more). Idempotent: a fact or edge already stored exactly so is left alone,
so a second run changes nothing. Facts already expired are skipped. The whole file is checked
before anything is written; a line the store refuses is reported and the rest goes on. It works
for any backend pair: a SQLite backup restored, or a personal store moved to a team's
PostgreSQL database (docs/team.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

BATCH = 256  # facts looked up and written together
PROGRESS_EVERY_S = 0.2
ALL_EDGES = 1 << 31  # out_edges limit meaning "every one"


@dataclass(frozen=True)
class FactLine:
    line: int
    id: int
    content: str
    metadata: dict[str, Any]
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


class BadLine(Exception):
    pass


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import", help="restore an export (JSON Lines) into the configured store, idempotently",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="a file written by `velesdb-memory export`")
    parser.add_argument("--path", type=Path, default=None,
                        help="store directory for the sqlite backend (default "
                             "VELESDB_MEMORY_PATH)")
    parser.set_defaults(handler=run)


def _u64(obj: dict[str, Any], name: str) -> int:
    value = obj.get(f"{name}_str", obj.get(name))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadLine(f"{name} must be a u64 (number or decimal string)")
    try:
        number = int(value)
    except ValueError:
        raise BadLine(f"{name} {value!r} is not a decimal id") from None
    if not 0 <= number < 1 << 64:
        raise BadLine(f"{name} {number} is not a u64")
    return number


def _number(obj: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    value = obj.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadLine(f"{name} must be a finite number")
    return float(value)


def _count(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadLine(f"{name} must be a non-negative integer")
    return value


def parse_line(n: int, text: str) -> FactLine | EdgeLine:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise BadLine("not a JSON object")
    if obj.get("type") == "fact":
        content, metadata, kind = obj.get("content"), obj.get("metadata", {}), obj.get("kind")
        if not isinstance(content, str):
            raise BadLine("content must be a string")
        if not isinstance(metadata, dict):
            raise BadLine("metadata must be an object")
        if kind is not None and not isinstance(kind, str):
            raise BadLine("kind must be a string or null")
        confidence = _number(obj, "confidence")
        assert confidence is not None
        if not 0.0 <= confidence <= 1.0:
            raise BadLine("confidence must be between 0 and 1")
        return FactLine(n, _u64(obj, "id"), content, metadata, kind, confidence,
                        _count(obj, "successes"), _count(obj, "failures"),
                        _number(obj, "created_at") or 0.0, _number(obj, "updated_at") or 0.0,
                        _number(obj, "expires_at", optional=True))
    if obj.get("type") == "edge":
        relation = obj.get("relation")
        if not isinstance(relation, str):
            raise BadLine("relation must be a string")
        return EdgeLine(n, _u64(obj, "from"), _u64(obj, "to"), relation)
    raise BadLine(f"type must be 'fact' or 'edge', got {obj.get('type')!r}")


def read_export(path: Path) -> list[FactLine | EdgeLine]:
    """Every line of the file, checked; VelesmemError naming the first bad line."""
    from velesmem.errors import InvalidInput

    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    out: list[FactLine | EdgeLine] = []
    with fh:
        try:
            for n, text in enumerate(fh, start=1):
                if text.strip():
                    try:
                        out.append(parse_line(n, text))
                    except BadLine as exc:
                        raise InvalidInput(f"{path}:{n}: {exc}; nothing was imported") from None
        except UnicodeDecodeError:
            raise InvalidInput(f"{path} is not UTF-8 text; nothing was imported") from None
    return out


class Progress:
    """A progress bar on stderr (redrawn in place on a terminal, a line per tenth elsewhere)."""

    def __init__(self, total: int, out: IO[str]) -> None:
        self.total = max(total, 1)
        self.out = out
        self.tty = out.isatty()
        self.done = 0
        self._drawn = 0.0
        self._tenth = -1

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        tenth = self.done * 10 // self.total
        if self.tty and (now - self._drawn >= PROGRESS_EVERY_S or self.done >= self.total):
            self._drawn = now
            filled = self.done * 30 // self.total
            self.out.write(f"\rimport [{'#' * filled}{'.' * (30 - filled)}] "
                           f"{self.done:,}/{self.total:,}")
            self.out.flush()
        elif not self.tty and tenth != self._tenth:
            self._tenth = tenth
            self.out.write(f"import: {self.done:,}/{self.total:,} lines\n")
            self.out.flush()

    def finish(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


@dataclass
class Tally:
    facts: int = 0
    edges: int = 0
    unchanged: int = 0
    expired: int = 0
    refused: int = 0


def _same(stored: Any, line: FactLine, metadata: dict[str, Any]) -> bool:
    return (stored.content == line.content and stored.metadata == metadata
            and stored.kind == line.kind and stored.confidence == line.confidence
            and stored.successes == line.successes and stored.failures == line.failures
            and stored.created_at == line.created_at and stored.expires_at == line.expires_at)


def import_lines(memory: Any, items: list[FactLine | EdgeLine], progress: Progress,
                 say: Any) -> Tally:
    """Write ``items`` through ``memory`` (a MemoryService); see the module docstring."""
    from velesmem.errors import VelesmemError
    from velesmem.ids import fact_id, to_i64

    store = memory.store
    tally = Tally()
    facts = [i for i in items if isinstance(i, FactLine)]
    edges = [i for i in items if isinstance(i, EdgeLine)]

    def refuse(line: int, message: str) -> None:
        tally.refused += 1
        say(f"line {line}: {message}")

    for start in range(0, len(facts), BATCH):
        batch = facts[start:start + BATCH]
        now = memory.now()
        stored = store.facts([to_i64(f.id) for f in batch], now, user_only=False)
        pending = []
        for f in batch:
            if f.expires_at is not None and f.expires_at <= now:
                tally.expired += 1
                continue
            current = stored.get(to_i64(f.id))
            if current is not None and _same(current, f, f.metadata):
                tally.unchanged += 1
                continue
            ttl = None if f.expires_at is None else max(1, math.ceil(f.expires_at - now))
            try:
                if f.kind is None:
                    if fact_id(f.content.strip()) != f.id:
                        raise BadLine(f"id {f.id} is not the hash of its content (edited?)")
                    future = memory.submit_remember(f.content, metadata=f.metadata,
                                                    ttl_seconds=ttl)
                else:
                    future = memory.submit_put_internal(f.id, f.content, f.metadata,
                                                        kind=f.kind, ttl_seconds=ttl)
                pending.append((f, future))
            except (VelesmemError, BadLine) as exc:
                refuse(f.line, getattr(exc, "message", str(exc)))
        for f, future in pending:
            try:
                future.result()
                store.restore(to_i64(f.id), f.confidence, f.successes, f.failures,
                              f.created_at, f.updated_at, f.expires_at).result()
                tally.facts += 1
            except VelesmemError as exc:
                refuse(f.line, exc.message)
        progress.step(len(batch))
    for start in range(0, len(edges), BATCH):
        batch = edges[start:start + BATCH]
        now = memory.now()
        existing: dict[int, set[tuple[int, str]]] = {}
        for e in batch:
            src = to_i64(e.src)
            if src not in existing:
                existing[src] = set(store.out_edges(src, now, ALL_EDGES))
            if (to_i64(e.dst), e.relation) in existing[src]:
                tally.unchanged += 1
                continue
            try:
                memory.relate(e.src, e.dst, e.relation)
                existing[src].add((to_i64(e.dst), e.relation))
                tally.edges += 1
            except VelesmemError as exc:
                refuse(e.line, exc.message)
        progress.step(len(batch))
    return tally


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.runtime import Runtime

    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    settings = Settings.from_env()
    if args.path is not None:
        settings = settings.with_overrides(path=args.path.expanduser())
    items = read_export(args.file)
    # Restore the export as it was: no autograph deriving more scaffolding meanwhile (an
    # --include-internal export carries the hubs and edges it built).
    runtime = Runtime.open(settings.with_overrides(autograph="off"))
    try:
        runtime.wait_ready_sync()
        progress = Progress(len(items), sys.stderr)
        tally = import_lines(runtime.memory, items, progress, say)
        progress.finish()
        location = runtime.store.location
    finally:
        runtime.close()
    say(f"imported {tally.facts} facts and {tally.edges} edges into {location} "
        f"({tally.unchanged} already there, {tally.expired} expired skipped, "
        f"{tally.refused} refused)")
    return 1 if tally.refused else 0

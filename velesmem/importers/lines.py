"""Stream a JSON Lines file as (where, object) pairs, for readers of JSONL sources.

Each line is read in chunks up to a byte cap (a longer line is refused before it is held whole),
decoded as UTF-8 and parsed; blank lines are passed over. The first line that is not a JSON
object raises ``CorruptInput`` naming ``file:line``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from velesmem import limits
from velesmem.importers.records import CorruptInput
from velesmem.memory.import_file import read_line


def json_lines(path: Path, *, max_line_bytes: int = limits.MAX_IMPORT_LINE_BYTES
               ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("name:N", object)`` for every non-blank line of ``path``, in order."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise CorruptInput(str(path), f"cannot be read ({exc.strerror})") from None
    with fh:
        n = 0
        while True:
            n += 1
            where = f"{path.name}:{n}"
            raw = read_line(fh, max_line_bytes)
            if raw is None:
                raise CorruptInput(where, f"the line is longer than {max_line_bytes:,} bytes")
            if not raw:
                return
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptInput(where, f"not UTF-8 text (byte {exc.start})") from None
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except RecursionError:
                raise CorruptInput(where, "JSON nested too deeply to read") from None
            except ValueError as exc:
                raise CorruptInput(where, f"not JSON ({getattr(exc, 'msg', exc)})") from None
            if not isinstance(obj, dict):
                raise CorruptInput(where, "not a JSON object")
            yield where, obj

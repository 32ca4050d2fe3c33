"""``velesdb-memory import --from SOURCE PATH``: another memory server's data into the store.

Read and check everything first (the source's reader, then ``velesmem.importers.plan``): a
corrupt input is refused naming its file and line or row, before the store is opened. Then what
the store does not hold yet is written in one transaction (``velesmem.importers.write``), and a
summary goes to stderr: facts, entities and links written, what was already there, and each
skipped item with its reason.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from velesmem.errors import VelesmemError

if TYPE_CHECKING:
    from velesmem.config import Settings

SKIPPED_SHOWN = 10  # skipped items listed one by one in the summary; the rest are counted


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_source(source: str, path: Path, settings: Settings,
               progress: Callable[[str, int, int | None], None]) -> int:
    """Import ``path`` as ``source``'s data (see the module docstring); 0 on success."""
    from velesmem.importers.plan import plan_path
    from velesmem.importers.write import write_plan
    from velesmem.runtime import Runtime

    path = path.expanduser()
    checked = plan_path(source, path, time.time(), lambda n: progress("read", n, None))
    _say(f"import: {path} read as {source}: {checked.read:,} items, {checked.user_facts:,} "
         f"distinct facts, {len(checked.facts) - checked.user_facts:,} entities, "
         f"{len(checked.edges):,} links")
    runtime = Runtime.open(settings.with_overrides(autograph="off"))
    try:
        runtime.wait_ready_sync()
        memory = runtime.memory
        try:
            report = write_plan(runtime.store, memory.embedder, checked, memory.now(), progress,
                                runtime.executor)
        except VelesmemError as exc:
            if "nothing was imported" in exc.message:
                raise
            raise type(exc)(f"{exc.message}; nothing was imported") from None
        location = runtime.store.location
    finally:
        runtime.close()
    _say(f"imported from {source}: {report.facts:,} facts, {report.entities:,} entities and "
         f"{report.edges:,} links into {location} ({report.unchanged:,} already there, "
         f"{report.repeated:,} repeated items counted once, {report.skipped:,} skipped)")
    for item in checked.skipped[:SKIPPED_SHOWN]:
        _say(f"  skipped {item.where}: {item.reason}")
    rest = checked.skipped[SKIPPED_SHOWN:]
    if rest:
        reasons = Counter(item.reason for item in rest)
        for reason, count in reasons.most_common():
            _say(f"  skipped {count:,} more: {reason}")
    return 0

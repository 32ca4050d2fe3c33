"""Run an import --from SOURCE on an open Runtime, and read back every stored fact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from velesmem import Runtime
from velesmem.importers.plan import Plan, plan_path
from velesmem.importers.write import ImportReport, write_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def import_into(runtime: Runtime, source: str, path: Path) -> tuple[Plan, ImportReport]:
    """Plan ``path`` as ``source`` and write it into ``runtime``'s store, as the CLI does."""
    memory = runtime.memory
    checked = plan_path(source, path, memory.now())
    return checked, write_plan(runtime.store, memory.embedder, checked, memory.now(),
                               pool=runtime.executor)


def stored_facts(runtime: Runtime) -> list[dict[str, Any]]:
    """Every live user fact as list_memories gives it (content, metadata, ids), all pages."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = runtime.memory.list_memories(cursor=cursor, limit=100).to_dict()
        out.extend(page["memories"])
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def store_counts(runtime: Runtime) -> tuple[int, int]:
    """(facts, edges) of the store, internal scaffolding's edges included."""
    counts = runtime.store.counts(runtime.memory.now())
    return counts.facts, counts.edges

"""Write a checked import into the store: all of it in one transaction, or nothing.

An item the store already holds under the same id (the same text remembered before, or by an
earlier run of the same import, or an entity hub already there) is left exactly as it is, so a
second run adds nothing and an import never rewrites a fact the user had. The rest goes through
the native import's path (``velesmem.memory.restore``): embedded by the store's embedder, then
facts, hubs and edges written in ONE transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from velesmem.embed.base import Embedder
from velesmem.ids import to_i64
from velesmem.importers.plan import Plan
from velesmem.memory.import_file import CheckedFile
from velesmem.memory.restore import LOOKUP_BATCH, RestoreStore, restore


@dataclass(frozen=True)
class ImportReport:
    """What one import did: new facts, entity hubs and edges written; items left as they were
    (already stored); items of the input that repeated another; items skipped (in the plan)."""

    facts: int
    entities: int
    edges: int
    unchanged: int
    repeated: int
    skipped: int


def write_plan(store: RestoreStore, embedder: Embedder, plan: Plan, now: float,
               step: Callable[[str, int, int], None] = lambda phase, done, total: None,
               pool: Executor | None = None) -> ImportReport:
    """Write what ``plan`` holds and the store does not, in one transaction (embedding in
    parts at once on ``pool``, the Runtime's workers, when given)."""
    stored: set[int] = set()
    for start in range(0, len(plan.facts), LOOKUP_BATCH):
        step("looked up", start, len(plan.facts))
        batch = [to_i64(f.id) for f in plan.facts[start:start + LOOKUP_BATCH]]
        stored.update(store.facts(batch, now, user_only=False))
    todo = [f for f in plan.facts if to_i64(f.id) not in stored]
    ids = {f.id for f in todo}
    checked = CheckedFile(facts=todo, edges=list(plan.edges),
                          outside={end for e in plan.edges for end in (e.src, e.dst)} - ids)
    report = restore(store, embedder, checked, now, step, pool)
    written = todo if report.facts else []
    users = sum(1 for f in written if f.kind is None)
    return ImportReport(users, len(written) - users, report.edges,
                        len(plan.facts) - len(todo) + report.unchanged, plan.repeated,
                        len(plan.skipped))


__all__ = ["ImportReport", "write_plan"]

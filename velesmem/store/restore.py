"""An import's one transaction, composed once for both backends from their ordinary write jobs.

Each backend's ``writes`` module has the same jobs (``remember``, ``put_internal``, ``restore``,
``relate``), each a function of the open connection returning an outcome (result, effect). Run
one after the other inside one job they share one transaction: the first refusal (an edge to a
missing fact, an id that belongs to the other kind of fact) rolls all of them back, and the
in-process effects (index updates, expiry timers) run only once everything has committed.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from velesmem.errors import Internal
from velesmem.store.types import FactWrite, RestoreWrite


def restore_job(store: Any, writes: ModuleType, outcome: type,
                write: RestoreWrite) -> Callable[[Any], Any]:
    """The job writing ``write`` through ``writes`` (a backend's jobs) on ``store``; its result
    is the number of facts plus edges written."""
    parts: list[Callable[[Any], Any]] = []
    for f in write.facts:
        if f.kind is None:
            if f.vector is None:
                raise Internal("a restored user fact needs its vector")
            parts.append(writes.remember(store, FactWrite(
                f.key, f.content, f.metadata_json, f.vector, write.now, f.expires_at)))
        else:
            parts.append(writes.put_internal(store, f.key, f.content, f.metadata_json, f.kind,
                                             write.now, f.expires_at))
        parts.append(writes.restore(store, f.key, f.confidence, f.successes, f.failures,
                                    f.created_at, f.updated_at, f.expires_at))
    parts.extend(writes.relate(store, src, dst, relation, write.now)
                 for src, dst, relation in write.edges)

    def job(conn: Any) -> Any:
        effects = [part(conn).effect for part in parts]

        def effect() -> None:
            for e in effects:
                if e is not None:
                    e()

        return outcome(len(write.facts) + len(write.edges), effect)

    return job

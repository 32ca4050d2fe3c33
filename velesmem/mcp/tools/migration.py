"""The online embedding-migration tools: migration_start, _status, _cancel, _recover.

Each answers ``{configured, job}`` (``velesmem.migration``): this daemon owns the one
background migration of its store and keeps serving the old embedding space while it runs.
"""

from __future__ import annotations

from typing import Annotated, Any

from velesmem.mcp.registry import ToolRegistry
from pydantic import Field

from velesmem import limits
from velesmem.mcp.annotations import READ, WRITE
from velesmem.mcp.app import AppContext
from velesmem.mcp.wire import Integer, OptInteger, optional

Result = dict[str, Any]

ORDER = 2  # after the memory and entity-graph tools, as in the contract


def register(mcp: ToolRegistry, app: AppContext) -> None:
    """Install the four migration tools, bound to the Runtime's MigrationService."""
    rt = app.runtime

    @mcp.tool(annotations=WRITE)
    async def migration_start(
        target_backend: Annotated[str, Field(description="An embedder this daemon can run: local, ollama, openai or hash.")],
        pause_budget_ms: Annotated[Integer, Field(description="Longest request pause admitted at cutover, in milliseconds.")],
        journal_max_bytes: Annotated[OptInteger, optional(f"Journal capacity (default {limits.DEFAULT_MIGRATION_JOURNAL_BYTES // limits.MIB} MiB); a full journal refuses a write rather than lose track of it.")],
        fact_batch: Annotated[OptInteger, optional(f"Facts re-embedded per base-copy batch (default {limits.DEFAULT_MIGRATION_FACT_BATCH}).")],
        replay_batch: Annotated[OptInteger, optional(f"Journal entries replayed per batch (default {limits.DEFAULT_MIGRATION_REPLAY_BATCH}).")],
        edge_cap: Annotated[OptInteger, optional(f"Outgoing edges synchronized per source (default {limits.DEFAULT_MIGRATION_EDGE_CAP}; edges are shared by both spaces here).")],
        observation_window: Annotated[OptInteger, optional(f"Consecutive replay samples that must converge before cutover (default {limits.DEFAULT_MIGRATION_OBSERVATION_WINDOW}).")],
        verification_reserve_ms: Annotated[OptInteger, optional(f"Part of the pause budget kept for the final check (default {limits.DEFAULT_MIGRATION_VERIFICATION_RESERVE_MS} ms).")],
    ) -> Result:
        """Start one online embedding migration: the target is loaded and probed, the job, its epoch, journal and destination recorded, and the daemon keeps serving the current embedder while it re-embeds in the background. Returns { configured, job }; poll migration_status."""
        work = {"journal_max_bytes": journal_max_bytes, "fact_batch": fact_batch,
                "replay_batch": replay_batch, "edge_cap": edge_cap,
                "observation_window": observation_window,
                "verification_reserve_ms": verification_reserve_ms}
        await rt.ready()
        return await rt.run(lambda: rt.migration.start(
            target_backend, pause_budget_ms, **{k: v for k, v in work.items() if v is not None}))

    @mcp.tool(annotations=READ)
    async def migration_status() -> Result:
        """Read the durable migration job and its progress (no work is done). Returns { configured, job }; phase is prepared, capturing, base_copied, catching_up, non_converging, cutover_ready, quiescing, activated, committed or cancelled."""
        return await rt.run(rt.migration.status)

    @mcp.tool(annotations=WRITE)
    async def migration_cancel() -> Result:
        """Durably request cancellation while the old embedder still serves; the generated space is removed once its epoch and target check out. Refused from quiescing on (the response names the recovery action). Returns { configured, job }."""
        return await rt.run(rt.migration.cancel)

    @mcp.tool(annotations=WRITE)
    async def migration_recover() -> Result:
        """Resume a stopped migration (prepared … cutover_ready) after checking the target's model, dimension and witness vector again. Returns { configured, job }; with nothing to recover (no migration, or one already running) it returns them as they stand (job null when none). A finished or cancelled job, or one in its cutover, is refused."""
        await rt.ready()
        return await rt.run(rt.migration.recover)


# Valid arguments for the MCP schema tests. On their hash-filled store a migration to hash has
# nothing to do, and with none started there is nothing to cancel: well-formed calls answered
# with a domain refusal (REFUSED_SAMPLES), so probing their slots starts no migration. With none
# started, migration_recover answers {configured, job: null}.
EXAMPLES: dict[str, dict[str, Any]] = {
    "migration_start": {"target_backend": "hash", "pause_budget_ms": 500,
                        "journal_max_bytes": 1 << 20, "fact_batch": 64, "replay_batch": 64,
                        "edge_cap": 4096, "observation_window": 3,
                        "verification_reserve_ms": 100},
    "migration_status": {},
    "migration_cancel": {},
    "migration_recover": {},
}
REFUSED_SAMPLES: dict[str, str] = {"migration_start": "InvalidInput",
                                   "migration_cancel": "InvalidInput"}

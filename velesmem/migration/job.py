"""The durable record of one online embedding migration, and its wire shape.

    prepared → capturing → base_copied → catching_up ⇄ non_converging → cutover_ready
        → quiescing → activated → committed            (cancelled from any phase before quiescing)

The record lives in the store's jobs table (kind ``migration``); every phase change and every
base-copy batch is written before the work it allows, so a crash anywhere resumes from what
was recorded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from velesmem import limits

PHASES = ("prepared", "capturing", "base_copied", "catching_up", "non_converging",
          "cutover_ready", "quiescing", "activated", "committed", "cancelled")
RESUMABLE = ("prepared", "capturing", "base_copied", "catching_up", "non_converging",
             "cutover_ready")
CUTTING_OVER = ("quiescing", "activated")
TERMINAL = ("committed", "cancelled")
KIND = "migration"

DEFAULTS: dict[str, int] = {
    "journal_max_bytes": limits.DEFAULT_MIGRATION_JOURNAL_BYTES,
    "fact_batch": limits.DEFAULT_MIGRATION_FACT_BATCH,
    "replay_batch": limits.DEFAULT_MIGRATION_REPLAY_BATCH,
    "edge_cap": limits.DEFAULT_MIGRATION_EDGE_CAP,
    "observation_window": limits.DEFAULT_MIGRATION_OBSERVATION_WINDOW,
    "verification_reserve_ms": limits.DEFAULT_MIGRATION_VERIFICATION_RESERVE_MS,
}


def empty_progress() -> dict[str, Any]:
    return {"base_facts": 0, "base_edges": 0, "batches": 0, "input_watermark": 0,
            "output_watermark": 0, "dirty_facts": 0, "dirty_edge_sources": 0,
            "pending_journal_bytes": 0, "estimated_pause_ms": None, "cutover_ms": None}


@dataclass
class MigrationJob:
    """One migration (see the module docstring)."""

    epoch_id: str
    phase: str
    target_backend: str
    target_model: str
    target_dimension: int
    target_witness: list[float]
    source_model: str
    source_dimension: int
    space_id: int
    destination: str
    pause_budget_ms: int
    work_limits: dict[str, int]
    created_at: float
    source_space_id: int | None = None
    cancellation_requested: bool = False
    last_error: str | None = None
    recovery_action: str | None = None
    cursor: int | None = None  # the last fact key the base copy finished
    samples: list[int] = field(default_factory=list)  # journal entries left, per replay round
    progress: dict[str, Any] = field(default_factory=empty_progress)

    @property
    def job_id(self) -> str:
        return f"{KIND}:{self.epoch_id}"

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> MigrationJob:
        return cls(**record)

    def to_wire(self, running: bool) -> dict[str, Any]:
        """The ``job`` object of the migration tools."""
        return {
            "epoch_id": self.epoch_id, "phase": self.phase, "running": running,
            "target": {"backend": self.target_backend, "model": self.target_model,
                       "dimension": self.target_dimension},
            "destination": self.destination,
            "cancellation_requested": self.cancellation_requested,
            "last_error": self.last_error, "recovery_action": self.recovery_action,
            "pause_budget_ms": self.pause_budget_ms, "limits": dict(self.work_limits),
            "progress": dict(self.progress),
        }

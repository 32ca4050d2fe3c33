"""What one wiring step did to one client, reported to the user and the installer summary."""

from __future__ import annotations

from dataclasses import dataclass

CHANGED = ("added", "updated", "removed")
PROBLEMS = ("refused", "failed")


@dataclass(frozen=True)
class Outcome:
    """``action`` is one of added, updated, unchanged, removed, absent, skipped, refused, failed."""

    client: str
    action: str
    detail: str = ""
    path: str | None = None
    backup: str | None = None

    @property
    def ok(self) -> bool:
        return self.action not in PROBLEMS

    @property
    def failed(self) -> bool:
        """A step that should have worked did not. A refused config (one we could not parse, or
        of an odd shape) is reported but is not a failure: it is the user's file, left as it was."""
        return self.action == "failed"

    @property
    def changed(self) -> bool:
        return self.action in CHANGED

    def line(self) -> str:
        """One human line: ``client  action  path (backup) — detail``."""
        parts = [f"{self.client:<15} {self.action:<9}"]
        if self.path:
            parts.append(self.path)
        if self.backup:
            parts.append(f"(backup: {self.backup})")
        if self.detail:
            parts.append(f"— {self.detail}")
        return " ".join(parts)

    def summary_status(self) -> str:
        """The installer summary's column: done, skipped, warning (refused) or failed."""
        if self.failed:
            return "failed"
        if self.action == "refused":
            return "warning"
        return "skipped" if self.action in ("skipped", "absent", "unchanged") else "done"

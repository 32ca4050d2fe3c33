"""Online embedding migration: a second embedding space built while the first serves."""

from velesmem.migration.job import PHASES, MigrationJob
from velesmem.migration.service import MigrationService

__all__ = ["PHASES", "MigrationJob", "MigrationService"]

"""Consolidation runs: preview, apply and undo the archiving of duplicate and superseded facts."""

from velesmem.consolidate.plan import ARCHIVED_RELATION, Change, Plan, plan
from velesmem.consolidate.service import ConsolidationService, PastRun, RunReport

__all__ = ["ARCHIVED_RELATION", "Change", "ConsolidationService", "PastRun", "Plan", "RunReport", "plan"]

"""The memory engine: MemoryService and its typed results."""

from velesmem.memory.service import MemoryService
from velesmem.store import ENTITY_HUB_KIND

__all__ = ["ENTITY_HUB_KIND", "MemoryService"]

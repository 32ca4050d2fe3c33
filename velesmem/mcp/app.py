"""What every tool module receives: the running services and the settings they were opened with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from velesmem.config import Settings
    from velesmem.memory.service import MemoryService


@dataclass
class AppContext:
    """The services behind the MCP tools; the transport owns their lifecycle (open/close)."""

    memory: MemoryService
    settings: Settings

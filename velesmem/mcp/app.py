"""What every tool module receives: the Runtime, whose services the tools call."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from velesmem.config import Settings
    from velesmem.context.service import ContextService
    from velesmem.memory.service import MemoryService
    from velesmem.runtime import Runtime


class AppContext:
    """The services behind the MCP tools; the transport owns the Runtime's lifecycle."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def memory(self) -> MemoryService:
        return self.runtime.memory

    @property
    def context(self) -> ContextService:
        return self.runtime.context

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

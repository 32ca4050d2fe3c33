"""What velesmem gives the agents that use it, beyond the tools: two skills (SKILL.md folders
shipped as package data, copied into an agent's skills directory by ``velesdb-memory skills
install``), Claude Code session hooks (``velesdb-memory hook …``) and the offline ``demo``.

Nothing here opens a store: the hooks talk to the running daemon, the demo goes through the
Runtime on a temporary store.
"""

from __future__ import annotations

SKILL_NAMES = ("velesdb-memory", "velesdb-context-optimizer")

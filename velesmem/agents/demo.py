"""``velesdb-memory demo``: what ``why`` finds that ``recall`` cannot, offline, in a second.

Two chains of three facts — a decision, the PR that carried it, the ticket it fixed — go into a
temporary store (hash embedder, removed afterwards) among a few unrelated facts. The first chain
is linked with ``relate``; the second only by the identifiers its facts share (``PR #57``,
``OPS-88``), which the autograph links in the background. For each, the same question goes to
``recall`` and to ``why``: the ticket shares no word with the question, so recall does not
return it, while why reaches it at hop 2. Every line printed is computed from the results.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from velesmem.memory.service import MemoryService

AUTOGRAPH_WAIT_S = 10.0
RECALL_K = 10
READY_WAIT_S = 30.0


@dataclass(frozen=True)
class Chain:
    title: str
    decision: str
    pr: str
    ticket: str
    ticket_name: str
    question: str
    relations: tuple[tuple[str, str, str], ...] = ()  # (from, relation, to) by role


CHAINS = (
    Chain("Linked with relate: a decision, its PR, the ticket it fixed",
          decision="we chose parking_lot to avoid lock poisoning after a panic",
          pr="PR #42 swaps the std Mutex for parking_lot",
          ticket="EPIC-317: intermittent CI hang under load",
          ticket_name="EPIC-317",
          question="why we chose parking_lot",
          relations=(("decision", "implemented_by", "pr"), ("pr", "fixes", "ticket"))),
    Chain("Linked only by the identifiers the facts share (autograph, no relate)",
          decision="we cap upload retries at three attempts, see PR #57",
          pr="PR #57 adds the retry cap and closes OPS-88",
          ticket="OPS-88: mobile clients drained their batteries overnight",
          ticket_name="OPS-88",
          question="why do we cap upload retries"),
)
UNRELATED = (
    "the staging cluster runs on three nodes",
    "release notes go out every Friday",
    "the billing service owns the invoices table",
    "we log request ids at INFO",
)


@dataclass(frozen=True)
class Hit:
    score: float
    content: str


@dataclass(frozen=True)
class Reached:
    hop: int
    content: str
    via: tuple[str, ...]  # the relations of the edges that reached it from the hop before


@dataclass
class Outcome:
    """One chain's question asked both ways."""

    chain: Chain
    recall: list[Hit] = field(default_factory=list)
    why: list[Reached] = field(default_factory=list)

    def ticket_in_recall(self) -> bool:
        return any(h.content == self.chain.ticket for h in self.recall)

    def ticket_hop(self) -> int | None:
        return next((r.hop for r in self.why if r.content == self.chain.ticket), None)


def run() -> list[Outcome]:
    """Build the temporary store, ask both questions both ways, and remove the store."""
    from velesmem.config import Settings
    from velesmem.runtime import Runtime

    with tempfile.TemporaryDirectory(prefix="velesmem-demo-") as tmp:
        settings = Settings.from_env({}).with_overrides(
            path=Path(tmp) / "store", tls_dir=Path(tmp) / "tls", embedder="hash",
            autograph="identifiers")
        runtime = Runtime.open(settings)
        try:
            runtime.wait_ready_sync(READY_WAIT_S)
            memory = runtime.memory
            for chain in CHAINS:
                ids = {role: memory.remember(getattr(chain, role)).id
                       for role in ("ticket", "pr", "decision")}
                for src, relation, dst in chain.relations:
                    memory.relate(ids[src], ids[dst], relation)
            for fact in UNRELATED:
                memory.remember(fact)
            runtime.autograph.wait_idle(AUTOGRAPH_WAIT_S)
            return [_ask(memory, chain) for chain in CHAINS]
        finally:
            runtime.close()


def _ask(memory: MemoryService, chain: Chain) -> Outcome:
    outcome = Outcome(chain)
    outcome.recall = [Hit(m.score, m.content) for m in memory.recall(chain.question, k=RECALL_K).memories]
    walk = memory.why(chain.question)
    hops = {n.id: n.hop for n in walk.nodes}
    for node in sorted(walk.nodes, key=lambda n: n.hop):
        via = tuple(e.relation for e in walk.edges
                    if e.to == node.id and hops.get(e.from_) == node.hop - 1)
        outcome.why.append(Reached(node.hop, node.content, via))
    return outcome


# --- rendering --------------------------------------------------------------------------------
class Style:
    """ANSI colour when ``on``, plain text otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def good(self, text: str) -> str:
        return self._wrap("32", text)

    def bad(self, text: str) -> str:
        return self._wrap("33", text)


def render(outcomes: list[Outcome], color: bool = False) -> str:
    """The demo's output: per chain, what recall returns next to what why returns."""
    s = Style(color)
    lines = [s.bold("velesdb-memory demo") + s.dim(" — an offline store in a temporary directory "
                                                    "(hash embedder), removed afterwards"), ""]
    roles = {"decision": "decision", "pr": "PR", "ticket": "ticket"}
    for n, out in enumerate(outcomes, 1):
        chain = out.chain
        lines.append(s.bold(f"{n}. {chain.title}"))
        for fact in (chain.decision, chain.pr, chain.ticket):
            lines.append(f"   remember  {fact}")
        for src, relation, dst in chain.relations:
            lines.append(f"   relate    {roles[src]} --{relation}--> {roles[dst]}")
        lines.append(f"   remember  {len(UNRELATED)} unrelated facts")
        lines.append("")
        lines.append(s.bold(f'recall("{chain.question}")') + s.dim("   [text + vector similarity]"))
        for hit in out.recall:
            lines.append(f"   {hit.score:4.2f}  {_mark(s, hit.content, chain)}")
        if not out.recall:
            lines.append(s.dim("   (nothing)"))
        if out.ticket_in_recall():
            lines.append(f"   └─ {chain.ticket_name} is among the hits.")
        elif not _words(chain.ticket) & _words(chain.question):
            lines.append(s.bad(f"   └─ {chain.ticket_name} is not here: the ticket shares no word "
                               "with the question."))
        else:
            lines.append(s.bad(f"   └─ {chain.ticket_name} is not among the hits."))
        lines.append("")
        lines.append(s.bold(f'why("{chain.question}")') + s.dim("      [best match + graph walk]"))
        width = max((len(r.content) for r in out.why), default=0)
        for reached in out.why:
            pad = " " * (width - len(reached.content))
            via = s.dim(f"{pad}  ← {', '.join(reached.via)}") if reached.via else ""
            lines.append(f"   hop {reached.hop}  {_mark(s, reached.content, chain)}{via}")
        hop = out.ticket_hop()
        if hop is None:
            lines.append(s.bad(f"   └─ the walk did not reach {chain.ticket_name}."))
        else:
            lines.append(s.good(f"   └─ the walk reached {chain.ticket_name}, the ticket the decision "
                                f"fixed, at hop {hop}."))
        lines.append("")
    lines.append("recall ranks by resemblance. why follows the links — typed with relate, or made by")
    lines.append("shared identifiers — to evidence that looks nothing like the question.")
    return "\n".join(lines)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", text.lower()))


def _mark(s: Style, content: str, chain: Chain) -> str:
    return s.good(content) if content == chain.ticket else content

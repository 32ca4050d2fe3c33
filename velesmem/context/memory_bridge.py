"""``memory_scope``: pull relevant stored memories in, ranked by fused score + importance blend.

score = fused_norm + confidence·(rl_confidence − 0.5)·2 + recency·recency_norm, re-ranking only the
pool the fused recall already selected; recency is min-max normalised within the batch.
"""

from __future__ import annotations

from typing import Any

from velesmem.context.estimator import estimate_tokens
from velesmem.context.items import Item
from velesmem.context.model import CompileRequest
from velesmem.ids import fnv1a64
from velesmem.limits import DEFAULT_CONFIDENCE


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def pull_memories(memory: Any, request: CompileRequest, start_order: int,
                  warnings: list[str] | None = None) -> list[Item]:
    """Items for the memories a fused recall returns, best blended score first; the recall's
    own warnings (vector search still loading) are added to ``warnings``."""
    scope = request.memory_scope
    assert scope is not None
    project = scope.project if scope.project is not None else request.project
    result = memory.recall_fused(
        request.query,
        k=scope.k,
        filter={"project": project} if project else None,
        hops=scope.hops,
        graph_boost=scope.graph_boost,
    )
    if warnings is not None:
        warnings.extend(getattr(result, "warnings", ()))
    memories = list(result.memories)
    if not memories:
        return []
    imp = request.policy.importance
    n = len(memories)
    confidences = memory.confidences([m.id for m in memories])
    recency_values: list[float | None] = [
        _number(m.metadata.get(imp.recency_field)) if imp.recency_field else None for m in memories
    ]
    present = [v for v in recency_values if v is not None]
    lo, hi = (min(present), max(present)) if present else (0.0, 0.0)
    ranked = []
    for pos, (m, rv) in enumerate(zip(memories, recency_values)):
        # recall_fused returns its fused ranking in order, but its ``score`` is the raw vector
        # similarity (0 for a graph-only hit), so the fused term is normalised from the rank.
        fused = (n - pos) / n
        confidence = confidences.get(m.id, DEFAULT_CONFIDENCE)
        recency = (rv - lo) / (hi - lo) if rv is not None and hi > lo else 0.0
        score = fused + imp.confidence * (confidence - 0.5) * 2 + imp.recency * recency
        ranked.append((score, pos, m, fused, confidence, recency))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    items = []
    for offset, (score, _, m, fused, confidence, recency) in enumerate(ranked):
        text = m.content
        h = fnv1a64(text.encode("utf-8"))
        items.append(
            Item(
                order=start_order + offset,
                index=None,
                fragment_id=h,
                content_hash=h,
                text=text,
                kind="memory",
                memory_id=m.id,
                memory_reason=(
                    f"pulled from memory {m.id} (fused {fused:.2f}, vector {max(m.score, 0.0):.2f}, "
                    f"confidence {confidence:.2f}, recency {recency:.2f})"
                ),
                relevance=round(min(1.0, max(0.0, score)), 4),
                tokens=estimate_tokens(text),
            )
        )
    return items

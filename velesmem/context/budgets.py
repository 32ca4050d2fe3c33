"""``suggest_budget``'s static window table; it never calls the network."""

from __future__ import annotations

from typing import Any

TABLE_AS_OF = "2026-07"
TABLE_SOURCE = f"velesmem static model-window table (as of {TABLE_AS_OF})"

WINDOWS: dict[str, int] = {
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "o3": 200_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-4.1": 1_000_000,
    "gemini-2.5-pro": 1_000_000,
    "gemini-2.0-flash": 1_000_000,
    "gpt-4o": 128_000,
}


def suggest_budget(target_model: str, reserve_tokens: int = 0) -> dict[str, Any]:
    """{window, suggested_budget, source}; an unlisted model gets nulls, never a guess."""
    window = WINDOWS.get(target_model.strip().lower())
    suggested = None if window is None else max(0, window - reserve_tokens)
    return {"window": window, "suggested_budget": suggested, "source": TABLE_SOURCE}

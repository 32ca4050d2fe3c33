"""Metadata predicates (``velesmem.store.predicates``) compiled to SQLite.

Each comparison is an index range over the ``fact_meta`` side table (``meta_index``); a
conjunction is the INTERSECT of its parts. ``fact_meta.type`` merges integers and reals into
``number``, so a comparison is type-strict the way the predicate tree says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from velesmem.store.predicates import All, Compare, intersect_selects
from velesmem.store.sqlite import meta_index

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class Compiled:
    """``ids``: a SELECT of the ids of every fact whose metadata satisfies the predicate (None
    for TRUE); ``sql``: the same as a boolean expression over the ``facts`` table."""

    ids: str | None
    params: tuple[Any, ...]

    @property
    def sql(self) -> str:
        return "1" if self.ids is None else f"facts.id IN ({self.ids})"


def _value(value: Any) -> Any:
    # SQLite binds 64-bit integers only; a bigger integer compares as the float it rounds to.
    if isinstance(value, int) and not isinstance(value, bool) and not _I64_MIN <= value <= _I64_MAX:
        return float(value)
    return value


def _one(part: Compare) -> tuple[str, tuple[Any, ...]]:
    where = "key = ? AND type = ?"
    params: tuple[Any, ...] = (part.key, part.type)
    if part.op is not None:
        where, params = f"{where} AND value {part.op} ?", (*params, _value(part.value))
    return f"SELECT id FROM {meta_index.TABLE} WHERE {where}", params


def compile_predicate(predicate: All) -> Compiled:
    return Compiled(*intersect_selects(predicate, _one))

"""Metadata predicates (``velesmem.store.predicates``) compiled to PostgreSQL.

Each comparison is an index range over the typed ``fact_meta`` rows (``meta_index``); a
conjunction is the INTERSECT of its parts. Type strictness comes from the row's ``type``: a
number never matches a string, an absent key has no row, and ``!=`` only compares values of the
asked type. Numbers are bound as the decimal text JSON gives them and compared as ``numeric``
(exact), strings compare in ``COLLATE "C"`` (code-point order), arrays and objects by jsonb
equality.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from velesmem.store.predicates import All, Compare, intersect_selects
from velesmem.store.postgres import meta_index

_SQL_OPS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class Compiled:
    """``ids``: a SELECT of the ids of every fact whose metadata satisfies the predicate (None
    for TRUE); ``condition(alias)``: the same as a boolean over a ``facts`` row."""

    ids: str | None
    params: tuple[Any, ...]

    def condition(self, alias: str = "facts") -> str:
        return "TRUE" if self.ids is None else f"{alias}.id IN ({self.ids})"


class Matched(np.ndarray):
    """The sorted keys ``matching()`` returned, remembering the predicate that produced them, so
    a filtered vector search over many keys can send the predicate (a semi-join PostgreSQL
    plans in well under a millisecond) instead of binding tens of thousands of keys (whose
    selectivity the planner estimates one by one). Any derived array (a slice, a copy) forgets
    it and is bound as keys."""

    compiled: Compiled | None = None

    def __array_finalize__(self, obj: object) -> None:
        self.compiled = None


def matched(keys: np.ndarray, compiled: Compiled) -> Matched:
    out = keys.view(Matched)
    out.compiled = compiled
    return out


def _one(part: Compare) -> tuple[str, tuple[Any, ...]]:
    table = meta_index.TABLE
    # The type is a literal so the planner matches the partial indexes (fact_meta_num / _str).
    kind = part.type
    if part.op is None:
        return f"SELECT id FROM {table} WHERE key = %s AND type = '{kind}'", (part.key,)
    op = _SQL_OPS[part.op]
    if kind == "number":
        return (f"SELECT id FROM {table} WHERE type = 'number' AND key = %s AND num {op} "
                "%s::numeric", (part.key, json.dumps(part.value)))
    if kind == "text":
        return (f"SELECT id FROM {table} WHERE type = 'text' AND key = %s AND str {op} %s",
                (part.key, str(part.value)))
    if kind in ("array", "object"):
        return (f"SELECT id FROM {table} WHERE type = '{kind}' AND key = %s AND js {op} "
                "%s::jsonb", (part.key, part.value))
    # null, true and false carry no value: the type says it all (an op on them is = / !=).
    if op == "=":
        return f"SELECT id FROM {table} WHERE key = %s AND type = '{kind}'", (part.key,)
    return f"SELECT id FROM {table} WHERE key = %s AND type = '{kind}' AND FALSE", (part.key,)


def compile_predicate(predicate: All) -> Compiled:
    return Compiled(*intersect_selects(predicate, _one))

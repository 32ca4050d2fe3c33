"""Metadata predicates as a small tree that every backend compiles.

A predicate constrains a fact's top-level metadata, type-strictly: a value only matches a stored
value of the same JSON type (numbers, integer or real, compare as numbers; strings by code
point; booleans and null by type alone; arrays and objects as canonical JSON, equality only).
An absent key never matches. ``All`` is the conjunction; ``TRUE`` (the empty ``All``) matches
every fact. The memory service builds these from the wire's filters after validating them;
backends only compile them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JSON_TYPES = ("null", "true", "false", "number", "text", "array", "object")
OPS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Compare:
    """Key ``key`` holds a value of JSON type ``type`` and, when ``op`` is set, stands in
    relation ``op`` to ``value`` (a number, a string, or canonical JSON for arrays/objects)."""

    key: str
    type: str
    op: str | None = None
    value: Any = None

    def __post_init__(self) -> None:
        if self.type not in JSON_TYPES:
            raise ValueError(f"unknown JSON type {self.type!r}")
        if self.op is not None and self.op not in OPS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True)
class All:
    """Every part holds (an empty ``All`` matches everything)."""

    parts: tuple[Compare, ...] = ()

    def __and__(self, other: All) -> All:
        return All(self.parts + other.parts)

    @property
    def is_true(self) -> bool:
        return not self.parts


Predicate = All
TRUE = All()


def intersect_selects(predicate: All, one: Callable[[Compare], tuple[str, tuple[Any, ...]]],
                      ) -> tuple[str | None, tuple[Any, ...]]:
    """For the SQL backends: a SELECT of the ids satisfying ``predicate``, one per part (``one``),
    intersected; None (no restriction) for TRUE."""
    if predicate.is_true:
        return None, ()
    selects: list[str] = []
    params: list[Any] = []
    for part in predicate.parts:
        sql, p = one(part)
        selects.append(sql)
        params.extend(p)
    return " INTERSECT ".join(selects), tuple(params)

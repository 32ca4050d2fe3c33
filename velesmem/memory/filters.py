"""Metadata filters from the wire, validated and turned into the store's predicate tree.

Both kinds are type-strict: a value only matches a stored value of the same JSON type
(numbers — integer or real — compare as numbers, strings by code point, booleans and null by
type). The exact filter (recall, recall_fused, why, list_memories) means "metadata equals every
given key" and also accepts null, arrays and objects (compared as canonical JSON). Typed
predicates (recall_where) take eq/ne/lt/le/gt/ge on strings and numbers, eq/ne on booleans; an
absent or null field never matches, ``ne`` included. Backends compile the tree
(``velesmem.store.predicates``).
"""

from __future__ import annotations

import math
from typing import Any

from velesmem import limits, validate
from velesmem.errors import InvalidInput
from velesmem.store.predicates import TRUE, All, Compare

OPS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _typed(key: str, value: Any, op: str) -> All:
    if isinstance(value, bool):
        if op == "=":
            return All((Compare(key, "true" if value else "false"),))
        return All((Compare(key, "false" if value else "true"),))
    if isinstance(value, (int, float)):
        return All((Compare(key, "number", op, value),))
    if isinstance(value, str):
        return All((Compare(key, "text", op, value),))
    raise AssertionError(value)


def _check_key(key: object, where: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"{where} keys must be non-empty strings, got {key!r}")
    if '"' in key or "\\" in key or any(ord(c) < 0x20 for c in key):
        raise InvalidInput(f"{where} key {key!r} cannot hold quotes, backslashes or control "
                           "characters")
    if len(key.encode("utf-8", "surrogatepass")) > limits.MAX_FIELD_NAME_BYTES:
        raise InvalidInput(f"{where} key is over the {limits.MAX_FIELD_NAME_BYTES}-byte cap")
    return key


def exact(filter: object, *, allow_reserved: bool = False, where: str = "filter") -> All:
    """The exact-match filter ``{key: value, ...}`` (None or {} → no constraint)."""
    if filter is None:
        return TRUE
    if not isinstance(filter, dict):
        raise InvalidInput(f"{where} must be an object of exact-match metadata, "
                           f"got {type(filter).__name__}")
    if len(filter) > limits.MAX_FILTERS:
        raise InvalidInput(f"{where} has {len(filter)} keys, over the {limits.MAX_FILTERS} cap")
    cond = TRUE
    for key, value in filter.items():
        _check_key(key, where)
        if not allow_reserved and validate.is_hidden(key):
            raise InvalidInput(f"{where} key {key!r} is reserved and cannot be filtered on")
        cond = cond & _exact_one(key, value, where)
    return cond


def _exact_one(key: str, value: Any, where: str) -> All:
    if value is None:
        return All((Compare(key, "null"),))
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{where}.{key} must be a finite number")
    if isinstance(value, (bool, int, float, str)):
        return _typed(key, value, "=")
    if isinstance(value, (list, dict)):
        try:
            encoded = validate.dumps(value)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"{where}.{key} is not JSON: {exc}") from None
        return All((Compare(key, "array" if isinstance(value, list) else "object", "=", encoded),))
    raise InvalidInput(f"{where}.{key} has an unsupported type {type(value).__name__}")


def predicates(filters: object) -> All:
    """recall_where's ANDed ``[{field, op, value}, ...]``."""
    if not isinstance(filters, list):
        raise InvalidInput(f"filters must be an array of {{field, op, value}}, "
                           f"got {type(filters).__name__}")
    if len(filters) > limits.MAX_FILTERS:
        raise InvalidInput(f"filters holds {len(filters)} predicates, over the "
                           f"{limits.MAX_FILTERS} cap")
    cond = TRUE
    for n, pred in enumerate(filters):
        where = f"filters[{n}]"
        if not isinstance(pred, dict) or set(pred) != {"field", "op", "value"}:
            raise InvalidInput(f"{where} must be an object with exactly field, op and value")
        field = validate.field_name(pred["field"], f"{where}.field")
        op, value = pred["op"], pred["value"]
        if op not in OPS:
            raise InvalidInput(f"{where}.op must be one of {', '.join(OPS)}, got {op!r}")
        if isinstance(value, bool):
            if op not in ("eq", "ne"):
                raise InvalidInput(f"{where}: booleans support eq and ne only, not {op}")
        elif isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidInput(f"{where}.value must be a finite number")
        elif not isinstance(value, str):
            raise InvalidInput(f"{where}.value must be a string, number or boolean, "
                               f"got {'null' if value is None else type(value).__name__}")
        cond = cond & _typed(field, value, OPS[op])
    return cond

"""Metadata predicates compiled to PostgreSQL keep the type-strict semantics: checked against a
Python oracle over generated metadata, and on the cases a jsonb shortcut would get wrong."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from velesmem.store.postgres.backend import PostgresStore
from velesmem.store.predicates import All, Compare
from velesmem.validate import dumps

from .conftest import key, write

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                    st.floats(-5, 5, allow_nan=False, allow_infinity=False).map(lambda f: round(f, 2)),
                    st.sampled_from(["a", "b", "B", "é", "ß", "z", "10", "9", ""]))
VALUES = st.one_of(SCALARS, st.lists(st.integers(0, 2), max_size=2),
                   st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 1), max_size=2))


def _type(value: object) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    return "array" if isinstance(value, list) else "object"


def _holds(stored: object, part: Compare) -> bool:
    """The predicate's meaning, in Python: same JSON type, then the comparison."""
    if _type(stored) != part.type:
        return False
    if part.op is None:
        return True
    if part.type in ("array", "object"):
        left, right = dumps(stored), part.value
    elif part.type == "text":  # code-point order
        left, right = [ord(c) for c in stored], [ord(c) for c in part.value]  # type: ignore[union-attr]
    else:
        left, right = stored, part.value
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[part.op]


def _part(value: object, op: str) -> Compare:
    kind = _type(value)
    if kind in ("null", "true", "false"):
        return Compare("k", kind)
    if kind in ("array", "object"):
        return Compare("k", kind, "=", dumps(value))
    return Compare("k", kind, op, value)


@hsettings(max_examples=20, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(VALUES, min_size=1, max_size=12),
       probe=SCALARS, op=st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
       nested=st.booleans())
def test_matching_agrees_with_the_oracle(pg: PostgresStore, stored: list[object],
                                         probe: object, op: str, nested: bool) -> None:
    texts = []
    for n, value in enumerate(stored):
        meta = {"k": value, "other": n} if n % 3 else {"other": n}  # some lack the key
        text = f"oracle fact {n} {json.dumps(meta)}"
        pg.remember(write(text, metadata=dumps(meta))).result()
        texts.append((text, meta))
    part = _part(probe if not nested else stored[0], op)
    want = sorted(key(t) for t, m in texts if "k" in m and _holds(m["k"], part))
    assert pg.matching(All((part,))).tolist() == want
    for text, _ in texts:
        pg.forget(key(text), 0.0).result()


def test_the_cases_a_jsonb_shortcut_gets_wrong(pg: PostgresStore) -> None:
    facts = {
        "array holding one": {"k": [1, 2]},
        "one as a real": {"k": 1.0},
        "one as text": {"k": "1"},
        "null": {"k": None},
        "longer array": {"k": [1, 2, 3]},
        "big integer": {"k": 18446744073709551615},
        "accented": {"k": "é"},
    }
    for text, meta in facts.items():
        pg.remember(write(text, metadata=dumps(meta))).result()

    def match(*parts: Compare) -> list[int]:
        return pg.matching(All(parts)).tolist()

    def keys(*texts: str) -> list[int]:
        return sorted(key(t) for t in texts)

    # containment would say [1, 2] holds 1, and [1, 2, 3] contains [1, 2]
    assert match(Compare("k", "number", "=", 1)) == keys("one as a real")
    assert match(Compare("k", "array", "=", "[1,2]")) == keys("array holding one")
    # jsonpath would say null != 1
    assert match(Compare("k", "number", "!=", 1)) == keys("big integer")
    # numbers beyond int64 compare exactly (numeric), not as a rounded float
    assert match(Compare("k", "number", ">", 18446744073709551614)) == keys("big integer")
    # code-point order: "é" (U+00E9) sorts after "z"; a locale collation would put it first
    assert match(Compare("k", "text", ">", "z")) == keys("accented")
    assert match(Compare("k", "null")) == keys("null")
    assert match(Compare("k", "text", "=", "1"), Compare("k", "text", "<", "2")) == keys(
        "one as text")

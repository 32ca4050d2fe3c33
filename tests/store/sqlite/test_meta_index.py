"""The fact_meta side table: it mirrors the facts' metadata through every write path and a
reopen, is filled for existing facts by its migration, and filters through it keep their
type-strict semantics (checked against a Python oracle)."""

from __future__ import annotations

import json
import sqlite3

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import velesmem
from velesmem.ids import fact_id, to_i64
from velesmem.store.sqlite.backend import DB_FILE
from velesmem.validate import dumps


def _typed(value: object) -> tuple[str, object]:
    """(type, comparable value) as the side table should hold it, derived in Python."""
    if value is None:
        return "null", 0
    if value is True or value is False:
        return ("true" if value else "false"), 0
    if isinstance(value, (int, float)):
        return "number", value
    if isinstance(value, str):
        return "text", value
    return ("array" if isinstance(value, list) else "object"), dumps(value)


def expected_rows(conn: sqlite3.Connection) -> set[tuple]:
    rows = set()
    for fid, meta in conn.execute("SELECT id, metadata FROM facts"):
        for key, value in json.loads(meta).items():
            rows.add((key, *_typed(value), fid))
    return rows


def side_rows(conn: sqlite3.Connection) -> set[tuple]:
    rows = set()
    for key, typ, value, fid in conn.execute("SELECT key, type, value, id FROM fact_meta"):
        if typ in ("array", "object"):
            value = dumps(json.loads(value))
        rows.add((key, typ, value, fid))
    return rows


def test_side_table_agrees_with_facts_after_reopen_forget_and_purge(store_dir, clock,
                                                                    settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        a = mem.remember("alpha note", metadata={"p": "x", "n": 3, "f": 1.5, "ok": True,
                                                 "z": None, "tags": ["a", 1], "o": {"k": 2}})
        b = mem.remember("beta note", metadata={"p": "y", "n": -7, "ok": False})
        short = mem.remember("short-lived note", metadata={"p": "x"}, ttl_seconds=30)
        mem.remember("alpha note", metadata={"p": "x2", "n": 4})  # same id: metadata replaced
        mem.put_internal(77, "scaffold", {"kind_of": "source", "n": 3}, kind="source")
        mem.put_internal(77, "scaffold", {"kind_of": "source2"}, kind="source")
        conn = mem.store.reader()
        assert side_rows(conn) == expected_rows(conn)
        assert ("p", "text", "x2", to_i64(a.id)) in side_rows(conn)
        mem.forget(b.id)
        assert not {r for r in side_rows(conn) if r[3] == to_i64(b.id)}
        assert side_rows(conn) == expected_rows(conn)
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        conn = mem.store.reader()
        assert side_rows(conn) == expected_rows(conn)
        assert [m.id for m in mem.list_memories(filter={"p": "x"}).memories] == [short.id]
        clock.advance(31)
        assert mem.list_memories(filter={"p": "x"}).memories == []  # invisible at once
        assert mem.purge_expired() == 1  # the Runtime's sweeper does this in the background
        assert conn.execute("SELECT count(*) FROM fact_meta WHERE id = ?",
                            (to_i64(short.id),)).fetchone()[0] == 0
        assert side_rows(conn) == expected_rows(conn)
        assert len(side_rows(conn)) == 4  # alpha's p, n and _veles_date; 77's kind_of
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        conn = mem.store.reader()
        assert side_rows(conn) == expected_rows(conn)


def test_migration_fills_the_side_table_for_existing_facts(store_dir, clock, settings) -> None:
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        for i in range(20):
            mem.remember(f"fact number {i}", metadata={"i": i, "even": i % 2 == 0})
    conn = sqlite3.connect(str(store_dir / DB_FILE))  # back to schema version 2
    conn.execute("DROP TABLE fact_meta")
    conn.execute("DELETE FROM schema_migrations WHERE version = 3")
    conn.commit()
    conn.close()
    with velesmem.open(store_dir, clock=clock, settings=settings).memory as mem:
        conn = mem.store.reader()
        assert conn.execute("SELECT count(*) FROM schema_migrations WHERE version = 3"
                            ).fetchone()[0] == 1
        assert len(side_rows(conn)) == 60
        assert side_rows(conn) == expected_rows(conn)
        got = mem.recall_where("fact number", [{"field": "i", "op": "ge", "value": 15},
                                               {"field": "even", "op": "eq", "value": True}])
        assert sorted(m.content for m in got.memories) == ["fact number 16", "fact number 18"]


# --- filter semantics against a Python oracle ------------------------------------------------

scalar_st = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                      st.sampled_from([0.0, 1.0, 1.5, -2.5, 2**63, -(2**63) - 5]),
                      st.sampled_from(["", "a", "b", "1", "true", "é", "B"]))
value_st = st.one_of(scalar_st, st.lists(st.integers(0, 2), max_size=2),
                     st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 1), max_size=2))
meta_st = st.dictionaries(st.sampled_from(["v", "w"]), value_st, max_size=2)


def _kind(value: object) -> str:
    return _typed(value)[0].replace("true", "bool").replace("false", "bool")


def exact_matches(meta: dict, flt: dict) -> bool:
    for key, want in flt.items():
        if key not in meta or _kind(meta[key]) != _kind(want):
            return False
        have = meta[key]
        if isinstance(want, (list, dict)):
            if dumps(have) != dumps(want):
                return False
        elif isinstance(want, (int, float)) and not isinstance(want, bool):
            if float(have) != float(want):
                return False
        elif have != want:
            return False
    return True


OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
       "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def predicate_matches(meta: dict, field: str, op: str, value: object) -> bool:
    if field not in meta or meta[field] is None or _kind(meta[field]) != _kind(value):
        return False
    have = meta[field]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        have, value = float(have), float(value)
    return OPS[op](have, value)


pred_st = st.one_of(
    st.tuples(st.sampled_from(["v", "w"]), st.sampled_from(list(OPS)),
              st.one_of(st.integers(-3, 3), st.sampled_from([1.5, 2**63]),
                        st.sampled_from(["", "a", "b", "é"]))),
    st.tuples(st.sampled_from(["v", "w"]), st.sampled_from(["eq", "ne"]), st.booleans()))


@hsettings(max_examples=30, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(metas=st.lists(meta_st, min_size=1, max_size=12),
       flt=st.dictionaries(st.sampled_from(["v", "w"]), value_st, min_size=1, max_size=2),
       pred=pred_st)
def test_filters_through_the_side_table_match_the_oracle(tmp_path_factory, clock, settings,
                                                         metas, flt, pred) -> None:
    path = tmp_path_factory.mktemp("metaoracle")
    with velesmem.open(path, clock=clock, settings=settings).memory as mem:
        ids = {}
        for n, meta in enumerate(metas):
            ids[mem.remember(f"record {n}", metadata=meta).id] = meta
        listed = {m.id for m in mem.list_memories(filter=flt, limit=100).memories}
        assert listed == {i for i, m in ids.items() if exact_matches(m, flt)}
        recalled = {m.id for m in mem.recall("record", k=100, filter=flt).memories}
        assert recalled == listed
        field, op, value = pred
        got = {m.id for m in mem.recall_where("record", [
            {"field": field, "op": op, "value": value}], k=100).memories}
        assert got == {i for i, m in ids.items() if predicate_matches(m, field, op, value)}
        assert fact_id("record 0") in ids

"""remember: ids, caps, reserved keys, auto-dating, links, TTL validation, update in place."""

from __future__ import annotations

import pytest

from velesmem import limits
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import fact_id
from velesmem.memory import MemoryService


def snapshot(mem: MemoryService) -> tuple:
    listed = mem.list_memories(limit=1000, include_internal=True).to_dict()
    edges = mem.store.reader().execute("SELECT id, src, dst, relation FROM edges ORDER BY id"
                                       ).fetchall()
    return listed, edges, mem.memory_status().to_dict()


def test_id_is_fnv_of_the_trimmed_text_with_a_string_twin(mem: MemoryService) -> None:
    res = mem.remember("  hello  ")
    assert res.id == fact_id("hello") == 0xA430D84680AABD0B
    assert res.to_dict() == {"id": res.id, "id_str": str(res.id)}


def test_same_text_same_id_updated_in_place(mem: MemoryService) -> None:
    a = mem.remember("the deploy is green", metadata={"v": 1})
    b = mem.remember("the deploy is green ", metadata={"v": 2})
    assert a.id == b.id
    page = mem.list_memories().memories
    assert len(page) == 1 and page[0].metadata["v"] == 2


def test_auto_date_from_the_injected_clock_in_utc(mem: MemoryService, clock) -> None:
    clock.now = 1_767_225_599.0  # 2025-12-31T23:59:59Z
    mem.remember("new year's eve")
    assert mem.list_memories().memories[0].metadata == {"_veles_date": 20251231}


def test_auto_date_follows_the_clock_across_midnight(mem: MemoryService, clock) -> None:
    clock.now = 1_767_225_599.0  # 2025-12-31T23:59:59Z
    mem.remember("before midnight")
    clock.now = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    mem.remember("after midnight")
    clock.now = 1_767_225_599.5  # the clock stepped back: the earlier day again
    mem.remember("stepped back")
    dates = {m.content: m.metadata["_veles_date"] for m in mem.list_memories().memories}
    assert dates == {"before midnight": 20251231, "after midnight": 20260101,
                     "stepped back": 20251231}


def test_explicit_date_is_kept(mem: MemoryService) -> None:
    mem.remember("incident", metadata={"_veles_date": 20260610})
    assert mem.list_memories().memories[0].metadata["_veles_date"] == 20260610


@pytest.mark.parametrize("given", ["20260610", 20261340, True, 1.5, None])
def test_explicit_date_is_stored_as_given(mem: MemoryService, given: object) -> None:
    """An explicit _veles_date is always respected (the contract), even one that is no YYYYMMDD
    integer: it is stored as given, and then simply never matches a numeric date range."""
    fid = mem.remember("incident", metadata={"_veles_date": given}).id
    assert mem.list_memories().memories[0].metadata["_veles_date"] == given
    in_range = mem.recall_where("incident", [{"field": "_veles_date", "op": "ge", "value": 20260101},
                                             {"field": "_veles_date", "op": "le", "value": 20261231}])
    assert fid not in [m.id for m in in_range.memories]


@pytest.mark.parametrize("blank", ["\x00", " \x00\t\n ", "\x01\x02", "\u200b\x00"[1:]])
def test_fact_of_only_control_characters_is_refused(mem: MemoryService, blank: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        mem.remember(blank)
    assert mem.list_memories().memories == []


def test_fact_cap_counts_utf8_bytes_and_names_the_size(mem: MemoryService) -> None:
    mem.remember("é" * (limits.MAX_EMBEDDABLE_TEXT_BYTES // 2))  # exactly 2048 bytes
    with pytest.raises(InvalidInput, match="2050 bytes, over the 2048-byte cap"):
        mem.remember("é" * 1025)


@pytest.mark.parametrize("bad", ["", "   \n\t", None, 42])
def test_empty_or_non_string_fact_is_refused(mem: MemoryService, bad: object) -> None:
    with pytest.raises(InvalidInput, match="fact"):
        mem.remember(bad)  # type: ignore[arg-type]


def test_metadata_cap(mem: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="over the 65536-byte cap"):
        mem.remember("big", metadata={"blob": "x" * limits.MAX_METADATA_BYTES})


@pytest.mark.parametrize("key", ["content", "_veles_id", "_veles_kind", "_veles_"])
def test_reserved_metadata_keys_are_refused(mem: MemoryService, key: str) -> None:
    with pytest.raises(InvalidInput, match="reserved"):
        mem.remember("fact", metadata={key: 1})


@pytest.mark.parametrize("bad", [[1], "x", {"a": float("nan")}])
def test_metadata_must_be_a_json_object(mem: MemoryService, bad: object) -> None:
    with pytest.raises(InvalidInput, match="metadata"):
        mem.remember("fact", metadata=bad)  # type: ignore[arg-type]


def test_links_create_edges_to_existing_targets(mem: MemoryService) -> None:
    pr = mem.remember("PR 42 switched to parking_lot")
    dec = mem.remember("we chose parking_lot", links=[{"target": pr.id_str,
                                                       "relation": "decided_in"}])
    why = mem.why("we chose parking_lot")
    # the link, and maybe (autograph runs in the background) the shared identifier's hop
    assert (dec.id, pr.id, "decided_in") in [(e.from_, e.to, e.relation) for e in why.edges]
    assert {e.relation for e in why.edges} <= {"decided_in", "via parking_lot"}


def test_link_to_a_missing_target_is_not_found_and_stores_nothing(mem: MemoryService) -> None:
    before = snapshot(mem)
    with pytest.raises(NotFound, match=r"links\[0\].target 12345"):
        mem.remember("orphan", links=[{"target": 12345, "relation": "r"}])
    assert snapshot(mem) == before


@pytest.mark.parametrize("link,match", [
    ({"target": "x", "relation": "r"}, "decimal string"),
    ({"target": 1}, "exactly the keys"),
    ({"target": 1, "relation": ""}, "relation must not be empty"),
    ({"target": 1, "relation": "a\x07b"}, "control"),
    ({"target": 1, "relation": "r" * 513}, "512-byte cap"),
])
def test_bad_links_are_refused(mem: MemoryService, link: dict, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        mem.remember("fact", links=[link])


def test_link_to_itself_is_refused(mem: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="itself"):
        mem.remember("self", links=[{"target": fact_id("self"), "relation": "r"}])


def test_too_many_links_are_refused(mem: MemoryService) -> None:
    links = [{"target": 1, "relation": "r"}] * (limits.MAX_LINKS_PER_FACT + 1)
    with pytest.raises(InvalidInput, match="over the 64 cap"):
        mem.remember("fact", links=links)


@pytest.mark.parametrize("ttl", [0, -5, 1.5, True, "60"])
def test_bad_ttl_is_refused(mem: MemoryService, ttl: object) -> None:
    with pytest.raises(InvalidInput, match="ttl_seconds"):
        mem.remember("fact", ttl_seconds=ttl)  # type: ignore[arg-type]


def test_bad_input_changes_nothing(mem: MemoryService) -> None:
    a = mem.remember("kept fact", metadata={"p": 1})
    before = snapshot(mem)
    calls = [
        lambda: mem.remember("kept fact", metadata={"content": "x"}),
        lambda: mem.remember("x" * 3000),
        lambda: mem.remember("kept fact", links=[{"target": 99, "relation": "r"}]),
        lambda: mem.relate(a.id, 99, "r"),
        lambda: mem.relate(a.id, a.id, "r"),
        lambda: mem.feedback(99, True),
        lambda: mem.feedback(a.id, "yes"),
        lambda: mem.recall("q", k=0),
        lambda: mem.recall_where("q", [{"field": "content", "op": "eq", "value": 1}]),
        lambda: mem.forget("abc"),
        lambda: mem.put_internal(a.id, "x", {}, kind="source"),
    ]
    for call in calls:
        with pytest.raises((InvalidInput, NotFound)):
            call()
    assert snapshot(mem) == before

"""The extraction model: validation, normalisation, and an exact JSON round trip for replays."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from velesmem import limits
from velesmem.errors import InvalidInput
from velesmem.extract import Attribute, Extraction, Fact, Relation, canonical_name
from velesmem.extract.model import make_attribute, make_fact, make_relation

_name = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20) \
    .filter(lambda s: s.strip() != "")
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                               max_size=3),
    max_leaves=8)


@st.composite
def extractions(draw: st.DrawFn) -> Extraction:
    facts = [make_fact(draw(_name), draw(st.lists(_name, max_size=3)))
             for _ in range(draw(st.integers(0, 4)))]
    relations = []
    for _ in range(draw(st.integers(0, 3))):
        s, o = draw(_name), draw(_name)
        if canonical_name(s) != canonical_name(o):
            relations.append(make_relation(s, draw(_name), o))
    keys = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=10).map(
        lambda k: "k" + k)  # never empty, never a reserved key
    attributes = [make_attribute(draw(_name), draw(keys), draw(_json))
                  for _ in range(draw(st.integers(0, 3)))]
    return Extraction.build(facts, relations, attributes)


def test_canonical_name_is_trim_and_lowercase() -> None:
    assert canonical_name("  Theo DURAND \t") == "theo durand"
    assert canonical_name("ΣΟΦΊΑ") == "σοφία"


@settings(max_examples=150, deadline=None)
@given(extractions())
def test_to_json_then_from_json_gives_back_the_same_extraction(extraction: Extraction) -> None:
    raw = extraction.to_json()
    again = Extraction.from_json(raw)
    assert again == extraction
    assert again.to_json() == raw  # byte-identical: a replay stores exactly the same


def test_to_json_is_canonical_and_versioned() -> None:
    out = Extraction.build([make_fact("Dana leads", ["Dana"])],
                           [make_relation("Dana", "Leads", "Parser")],
                           [make_attribute("Dana", "meta", {"b": 1, "a": [1.5, None]})])
    doc = json.loads(out.to_json())
    assert doc == {"version": 1, "facts": [{"text": "Dana leads", "topics": ["dana"]}],
                   "relations": [["dana", "leads", "parser"]],
                   "attributes": [["dana", "meta", {"a": [1.5, None], "b": 1}]]}
    assert out.to_json() == json.dumps(doc, sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("raw", [
    "", "[]", "not json", '{"version": 2, "facts": [], "relations": [], "attributes": []}',
    '{"version": 1, "facts": [], "relations": []}',
    '{"attributes":[],"facts":[{"text":"x"}],"relations":[],"version":1}',
    '{"attributes":[],"facts":[{"text":1,"topics":[]}],"relations":[],"version":1}',
    '{"attributes":[],"facts":[],"relations":[["a","r"]],"version":1}',
    '{"attributes":[],"facts":[],"relations":[["a","r","a"]],"version":1}',
    '{"attributes":[["e","k",NaN]],"facts":[],"relations":[],"version":1}',
    # well-formed but not canonical (upper-case topic): it would not replay the same bytes
    '{"attributes":[],"facts":[{"text":"x","topics":["Dana"]}],"relations":[],"version":1}',
    '{"version":1,"attributes":[],"facts":[],"relations":[]}',
])
def test_from_json_refuses_anything_but_a_canonical_stored_extraction(raw: str) -> None:
    with pytest.raises(InvalidInput):
        Extraction.from_json(raw)


def test_validation_reuses_the_relation_rules() -> None:
    assert make_relation("a", "r" * limits.MAX_RELATION_BYTES, "b").predicate
    with pytest.raises(InvalidInput, match="512-byte"):
        make_relation("a", "r" * (limits.MAX_RELATION_BYTES + 1), "b")
    with pytest.raises(InvalidInput, match="control"):
        make_relation("a\x1fb", "r", "b")
    with pytest.raises(InvalidInput, match="empty"):
        make_fact("  ")
    with pytest.raises(InvalidInput, match="serialisable"):
        make_attribute("e", "k", float("nan"))
    with pytest.raises(InvalidInput, match="serialisable"):
        make_attribute("e", "k", {1, 2})


def test_build_merges_repeated_facts_and_keeps_first_appearance_order() -> None:
    out = Extraction.build([Fact("b", ("x",)), Fact("a"), Fact("b", ("y", "x"))],
                           [Relation("p", "r", "q"), Relation("p", "r", "q")],
                           [Attribute("e", "k", 1), Attribute("f", "k", 0), Attribute("e", "k", 2)])
    assert out.facts == (Fact("b", ("x", "y")), Fact("a"))
    assert out.relations == (Relation("p", "r", "q"),)
    assert out.attributes == (Attribute("e", "k", 2), Attribute("f", "k", 0))


def test_merge_of_slices_is_the_build_of_their_parts_in_order() -> None:
    one = Extraction.build([Fact("a", ("t",))], [Relation("t", "r", "u")])
    two = Extraction.build([Fact("a", ("v",)), Fact("b")], [Relation("t", "r", "u")],
                           [Attribute("t", "k", True)])
    merged = Extraction.merge([one, two])
    assert merged.facts == (Fact("a", ("t", "v")), Fact("b"))
    assert merged.relations == (Relation("t", "r", "u"),)
    assert merged.entities == ("t", "v", "u")


def test_merged_topics_over_the_cap_are_refused() -> None:
    half = limits.MAX_TOPICS_PER_FACT // 2 + 1
    one = make_fact("x", [f"a{n}" for n in range(half)])
    two = make_fact("x", [f"b{n}" for n in range(half)])
    with pytest.raises(InvalidInput, match="topic cap"):
        Extraction.build([one, two])

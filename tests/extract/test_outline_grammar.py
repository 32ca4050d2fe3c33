"""The outline directive grammar: every directive, names canonicalised, malformed lines refused."""

from __future__ import annotations

import pytest

from velesmem import limits
from velesmem.config import Settings
from velesmem.errors import InvalidDirective, InvalidInput
from velesmem.extract import Attribute, Extraction, Fact, Relation, load, parse_outline


def test_every_directive_and_a_plain_line() -> None:
    out = parse_outline(
        "Met Dana at the Rust meetup.\n"
        "fact: Dana leads the parser rewrite | Dana, Parser Rewrite\n"
        "edge: Camille | soeur de | Theo\n"
        "attr: Theo | age | 15\n")
    assert out == Extraction(
        facts=(Fact("Met Dana at the Rust meetup."),
               Fact("Dana leads the parser rewrite", ("dana", "parser rewrite"))),
        relations=(Relation("camille", "soeur de", "theo"),),
        attributes=(Attribute("theo", "age", 15),))


def test_names_and_predicates_are_trimmed_and_lowercased_but_fact_text_and_keys_keep_case() -> None:
    out = parse_outline("fact:   The Parser   |  Rust ,  PARSER  \n"
                        "edge:  Dana  |  Leads On  |  Parser \n"
                        "attr:  Dana | BirthYear | 1990")
    assert out.facts == (Fact("The Parser", ("rust", "parser")),)
    assert out.relations == (Relation("dana", "leads on", "parser"),)
    assert out.attributes == (Attribute("dana", "BirthYear", 1990),)


def test_unicode_names_are_lowercased_too() -> None:
    out = parse_outline("edge: ÉCOLE Normale | Accueille | Théo\nfact: Ωμέγα | ΣΟΦΊΑ, 東京")
    assert out.relations == (Relation("école normale", "accueille", "théo"),)
    assert out.facts == (Fact("Ωμέγα", ("σοφία", "東京")),)


@pytest.mark.parametrize(("raw", "value"), [
    ('"a string"', "a string"), ("42", 42), ("-1.5e3", -1500.0), ("true", True),
    ("false", False), ("null", None), ('[1, "two", [3]]', [1, "two", [3]]),
    ('{"b": 1, "a": {"x": "| pipes | too"}}', {"b": 1, "a": {"x": "| pipes | too"}}),
])
def test_attr_values_are_any_json(raw: str, value: object) -> None:
    (attr,) = parse_outline(f"attr: e | k | {raw}").attributes
    assert attr.value == value and type(attr.value) is type(value)


def test_keywords_are_case_insensitive_and_need_the_colon_right_after() -> None:
    out = parse_outline("EDGE: a | r | b\nFact: x | t\nedge : not | a | directive")
    assert out.relations == (Relation("a", "r", "b"),)
    assert out.facts == (Fact("x", ("t",)), Fact("edge : not | a | directive"))


def test_a_fact_is_everything_before_the_last_bar_and_may_omit_topics() -> None:
    out = parse_outline("fact: use a || b for this | rust\nfact: no topics here")
    assert out.facts == (Fact("use a || b for this", ("rust",)), Fact("no topics here"))


def test_blank_lines_crlf_and_a_bom_are_handled() -> None:
    out = parse_outline("\ufefffact: one | t\r\n\r\n   \r\nedge: a | r | b\rtwo")
    assert [f.text for f in out.facts] == ["one", "two"] and len(out.relations) == 1


def test_repeats_merge_facts_dedup_relations_and_the_last_attribute_wins() -> None:
    out = parse_outline("fact: x | a\nedge: a | r | b\nfact: x | b, a\nedge: A | R | B\n"
                        "attr: e | k | 1\nattr: E | k | 2")
    assert out.facts == (Fact("x", ("a", "b")),)
    assert out.relations == (Relation("a", "r", "b"),)
    assert out.attributes == (Attribute("e", "k", 2),)


@pytest.mark.parametrize(("line", "reason"), [
    ("edge: a | b", "2 part"),
    ("edge: a | b | c | d", "4 part"),
    ("edge:  | r | b", "subject is empty"),
    ("edge: a |  | b", "predicate is empty"),
    ("edge: a | r | A ", "same entity"),
    ("edge: a | r\x07 | b", "control character"),
    ("edge: " + "a" * (limits.MAX_ENTITY_NAME_BYTES + 1) + " | r | b", "over the 512-byte"),
    ("edge: a | " + "é" * 257 + " | b", "predicate is 514 bytes"),
    ("attr: e | k", "2 part"),
    ("attr: e | k | fifteen", "not JSON"),
    ("attr: e | k | NaN", "not JSON"),
    ("attr: e | k | ", "not JSON"),
    ("attr: e | k | {\"a\": 1", "not JSON"),
    ("attr: e | k | " + "[" * 30_000 + "]" * 30_000, "not JSON"),  # too deep to parse
    ("attr: e | k | " + '"' + "v" * limits.MAX_ATTR_VALUE_BYTES + '"', "over the 65536-byte"),
    ("attr: e |  | 1", "key is empty"),
    ("attr: e | content | 1", "reserved"),
    ("attr: e | _veles_date | 20260101", "reserved"),
    ("attr:  | k | 1", "entity is empty"),
    ("fact:  | a", "fact text is empty"),
    ("fact: x | a, , b", "topic is empty"),
    ("fact: x |", "topic is empty"),
    ("fact: x | " + ", ".join(f"t{n}" for n in range(limits.MAX_TOPICS_PER_FACT + 1)), "65 topics"),
    ("fact:", "fact text is empty"),
])
def test_a_malformed_directive_is_refused_naming_its_line(line: str, reason: str) -> None:
    with pytest.raises(InvalidDirective) as refused:
        parse_outline(f"fact: fine | x\n\nMet Dana.\n{line}\nfact: after")
    assert refused.value.line == 4
    assert str(refused.value).startswith("line 4: ")
    assert reason in str(refused.value)
    assert isinstance(refused.value, InvalidInput)


def test_an_error_quotes_a_long_line_only_in_part() -> None:
    with pytest.raises(InvalidDirective) as refused:
        parse_outline("edge: " + "word " * 500)
    assert len(str(refused.value)) < 300


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(InvalidInput, match="lone surrogate"):
        parse_outline("fact: bad \ud800 text")


def test_text_over_max_fact_bytes_is_refused_and_at_the_cap_accepted() -> None:
    at_cap = ("x" * 1023 + "\n") * (limits.MAX_FACT_BYTES // 1024)
    assert len(at_cap.encode()) == limits.MAX_FACT_BYTES
    assert len(parse_outline(at_cap).facts) == 1  # one line, repeated: merged
    with pytest.raises(InvalidInput, match="MAX_FACT_BYTES"):
        parse_outline(at_cap + "y")


def test_a_fact_over_the_embeddable_cap_is_kept_whole_and_counted_as_skipped() -> None:
    long = "x" * (limits.MAX_EMBEDDABLE_TEXT_BYTES + 1)
    out = parse_outline(f"{long}\nfact: {'y' * limits.MAX_EMBEDDABLE_TEXT_BYTES} | t\n"
                        "edge: a | r | b")
    assert out.facts[0].text == long and out.facts[0].over_cap
    kept, skipped = out.within_cap()
    assert skipped == 1 and [f.text[0] for f in kept.facts] == ["y"]
    assert kept.relations == out.relations


def test_nothing_but_blank_lines_is_an_empty_extraction() -> None:
    assert parse_outline("\n  \n\t\n") == Extraction()


def test_the_outline_extractor_parses_what_it_is_given() -> None:
    extractor = load("outline", Settings())
    assert extractor.name == "outline"
    assert extractor.extract("edge: a | r | b").relations == (Relation("a", "r", "b"),)
    with pytest.raises(InvalidDirective):
        extractor.extract("attr: a | b")
    extractor.close()

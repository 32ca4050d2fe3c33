"""parse_reply: a model's directives within the usual wrapping, and nothing looser."""

from __future__ import annotations

import pytest

from velesmem.errors import InvalidDirective, InvalidInput
from velesmem.extract import Extraction, Fact, Relation, parse_reply

CLEAN = Extraction.build([Fact("Dana leads the rewrite", ("dana",))],
                         [Relation("dana", "leads", "rewrite")])


@pytest.mark.parametrize("reply", [
    "fact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite",
    "\n\n  fact: Dana leads the rewrite | dana  \n\nedge: dana | leads | rewrite\n\n",
    "Here are the directives:\nfact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite",
    "fact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite\nLet me know if that helps.",
    "```\nfact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite\n```",
    "Sure:\n```text\nfact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite\n```\nDone.",
    "- fact: Dana leads the rewrite | dana\n- edge: dana | leads | rewrite",
    "1. fact: Dana leads the rewrite | dana\n2) edge: dana | leads | rewrite",
    "* fact: Dana leads the rewrite | dana\n• edge: dana | leads | rewrite",
    "<think>\nThe passage says Dana leads.\nfact: not this\n</think>\n"
    "fact: Dana leads the rewrite | dana\nedge: dana | leads | rewrite",
    "FACT: Dana leads the rewrite | Dana\nEdge: Dana | Leads | Rewrite",
])
def test_accepted_wrappings_give_the_same_extraction(reply: str) -> None:
    assert parse_reply(reply) == CLEAN


@pytest.mark.parametrize("reply", ["NONE", " none. ", "```\nNONE\n```"])
def test_none_is_an_empty_extraction(reply: str) -> None:
    assert parse_reply(reply) == Extraction()


@pytest.mark.parametrize(("reply", "match"), [
    ("", "no directive"),
    ("Dana leads the rewrite.", "no directive"),
    ("fact: a\nDana leads the rewrite.\nfact: b", "line 2: not a directive"),
    ("fact: a\n- Dana leads\nfact: b", "line 2: not a directive"),
    ("fact: a\nedge: a | b\n", "line 2: edge"),
    ("```\nfact: a\n```\nand\n```\nfact: b\n```", "fence lines"),
    ("```\nfact: a\n", "not closed"),
    ("<think>still thinking", "not closed"),
    ("- not a directive\n- nor this", "no directive"),
])
def test_anything_looser_is_refused_with_the_reason(reply: str, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        parse_reply(reply)


def test_none_before_directives_is_only_leading_commentary() -> None:
    assert parse_reply("NONE\nfact: x").facts == (Fact("x"),)


def test_line_numbers_point_into_the_reply_as_received() -> None:
    reply = "<think>\na\nb\n</think>\nIntro:\n```\nfact: ok\nedge: broken\n```"
    with pytest.raises(InvalidDirective) as refused:
        parse_reply(reply)
    assert refused.value.line == 8

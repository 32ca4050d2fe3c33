"""The finders' shortcuts change no answer: each identifier rule's gate is in every match it takes,
and the technology names' prefix tree matches exactly the committed spellings."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.extract.test_identifiers import NEGATIVE, POSITIVE
from velesmem.extract.identifiers import DOTFILES, FILE_EXTENSIONS, FILE_NAMES, RULES, Rule
from velesmem.extract.names import CAPITALISED_ONLY, TECHNOLOGY, TECHNOLOGIES, find_names

BENCH_DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
PIECES = ["EPIC-317", "#42", "PR", " ", "/", ".", "_", "@", "!", "-", "::", "`", "v", "0.12", "1",
          "a1b2c3d", "https://", "x.py", "\\", ":", "==", "\n", "Foo", "bar", "é", "(", ")", "C:",
          '"', "=", "^", "~", "__", "the", "Makefile", "codeowners", "ADR", " 14", "CVE-2024-1234",
          "GHSA", "parking_lot", "fooBar", "std::io", "a.b", "v1.2.3", "1.4.0-rc.1", "!7", "gh"]


def _corpus() -> list[str]:
    texts = [text for text, _ in POSITIVE] + list(NEGATIVE)
    texts += [*FILE_NAMES, *(n.lower() for n in FILE_NAMES), *(n.upper() for n in FILE_NAMES)]
    texts += [f".{d}" for d in DOTFILES] + [f"a.{e}" for e in FILE_EXTENSIONS]
    for line in (BENCH_DATA / "entities.jsonl").read_text().splitlines():
        texts.append(json.loads(line)["text"])
    rng = random.Random(20261205)
    texts += ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 24))) for _ in range(4000)]
    return texts


CORPUS = _corpus()
SPELLINGS = {s for spellings in TECHNOLOGIES.values() for s in spellings}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.handler.__name__)
def test_each_rules_gate_is_in_every_match_it_takes(rule: Rule) -> None:
    gate, pattern, handler = rule
    taken = 0
    for text in CORPUS:
        for match in pattern.finditer(text):
            if handler(match)[1]:
                taken += 1
                assert gate.search(match.group(0)), (gate.pattern, match.group(0))
    assert taken, f"the corpus never exercises {handler.__name__}"


@pytest.mark.parametrize("canonical", sorted(TECHNOLOGIES))
def test_every_spelling_and_only_a_spelling_is_a_technology(canonical: str) -> None:
    for spelling in TECHNOLOGIES[canonical]:
        written = spelling.capitalize() if spelling in CAPITALISED_ONLY else spelling
        found = [(n.kind, n.canonical) for n in find_names(f"We moved it to {written} today.")]
        assert found == [(TECHNOLOGY, canonical)], written
        for near in (spelling[:-1], spelling + "x", "x" + spelling):
            if not any(near in s for s in SPELLINGS):
                assert find_names(f"We moved it to {near.capitalize()} today.") == [], near


def test_a_letter_that_folds_to_a_spelling_is_no_technology_and_raises_nothing() -> None:
    # case-blind matching folds the long s (ſ) to s and the Kelvin sign (K) to k
    assert [n.canonical for n in find_names("moved to k8ſ")] == []
    assert [n.canonical for n in find_names("moved to \u212aafka")] == ["kafka"]

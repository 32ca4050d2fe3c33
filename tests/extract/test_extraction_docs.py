"""docs/extraction.md keeps up with the code: kinds, settings, and its examples still hold."""

from __future__ import annotations

import json
import re
from pathlib import Path

from velesmem.config import SETTINGS
from velesmem.extract import KINDS, SYSTEM_PROMPT, find_identifiers, parse_outline, parse_reply

DOC = (Path(__file__).resolve().parents[2] / "docs" / "extraction.md").read_text(encoding="utf-8")


def test_every_identifier_kind_has_a_row() -> None:
    rows = {line.split("|")[1].strip() for line in DOC.splitlines() if line.startswith("| ")}
    missing = [k for k in KINDS if k not in rows and k != "package"]
    assert not missing and "kind package" in DOC


def test_every_extraction_setting_is_documented() -> None:
    names = [s.env_name for s in SETTINGS if "EXTRACTOR" in s.env or s.env == "AUTOGRAPH"]
    assert len(names) == 6
    assert [n for n in names if f"`{n}`" not in DOC] == []


def test_the_agent_pattern_example_parses_and_meets_the_autograph_hubs() -> None:
    block = re.search(r"remember_extracted (\{.*?\n\})", DOC, re.DOTALL)
    assert block
    text = json.loads(block.group(1))["text"]
    out = parse_outline(text)
    assert len(out.facts) == 2 and out.relations[0].subject == "#42"
    autograph = {i.canonical for f in out.facts for i in find_identifiers(f.text)}
    assert {"#42", "parking_lot"} <= autograph & set(out.entities)


def test_the_prompts_own_example_answer_is_a_valid_reply() -> None:
    answer = SYSTEM_PROMPT.split("Example answer:\n", 1)[1]
    out = parse_reply(answer)
    assert len(out.facts) == 2 and len(out.relations) == 2 and len(out.attributes) == 1

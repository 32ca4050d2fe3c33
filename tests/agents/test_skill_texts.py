"""The skills (and the Codex AGENTS.md block) cannot drift from the tools: every tool, parameter
and result field they mention must exist in the live server's schemas and results."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_surface import collect
from skill_refs import Surface, references

from velesmem.agents import SKILL_NAMES
from velesmem.agents.install import agents_md_snippet, shipped_files
from velesmem.config import Settings
from velesmem.runtime import Runtime

TOOLS_JSON = Path(__file__).resolve().parents[2] / "docs" / "tools.json"
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
FRONT_KEYS = {"name", "description", "license", "compatibility", "metadata"}
MAX_DESCRIPTION = 1024


@pytest.fixture(scope="module")
def surface(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surface]:
    root = tmp_path_factory.mktemp("surface")
    settings = Settings.from_env({}).with_overrides(path=root / "store", tls_dir=root / "tls")
    runtime = Runtime.open(settings)
    try:
        runtime.wait_ready_sync(30)
        yield asyncio.run(collect(runtime))
    finally:
        runtime.close()


def _texts() -> dict[str, str]:
    texts = {name: shipped_files(name)["SKILL.md"].decode("utf-8") for name in SKILL_NAMES}
    texts["AGENTS.md"] = agents_md_snippet("demo")
    return texts


def front_matter(text: str) -> dict[str, str]:
    match = FRONT.match(text)
    assert match, "SKILL.md must open with --- front matter ---"
    fields = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        assert sep and key.strip(), f"front matter line {line!r} is not key: value"
        fields[key.strip()] = value.strip()
    return fields


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_skill_front_matter_names_the_folder_and_describes_when_to_use_it(name: str) -> None:
    fields = front_matter(shipped_files(name)["SKILL.md"].decode("utf-8"))
    assert fields.get("name") == name and NAME.match(name)
    assert set(fields) <= FRONT_KEYS, set(fields) - FRONT_KEYS
    assert 40 <= len(fields.get("description", "")) <= MAX_DESCRIPTION
    assert "Use it when" in fields["description"] or "Use it at" in fields["description"]


@pytest.mark.parametrize("name", [*SKILL_NAMES, "AGENTS.md"])
def test_every_tool_parameter_and_field_mentioned_exists_live(name: str, surface: Surface) -> None:
    refs = list(references(_texts()[name]))
    tools = {r.path for r in refs if r.kind == "tool"}
    assert len(refs) > 30 and len(tools) >= 6, "the notation found almost nothing to check"
    assert surface.problems(refs) == []


def test_the_memory_skill_covers_the_whole_loop() -> None:
    tools = {r.path for r in references(_texts()["velesdb-memory"]) if r.kind == "tool"}
    assert {"recall", "remember", "relate", "why", "feedback", "save_working_context",
            "load_working_context", "list_working_contexts", "entity"} <= tools


def test_the_optimizer_skill_covers_compile_risk_handles_and_retrieval() -> None:
    text = _texts()["velesdb-context-optimizer"]
    tools = {r.path for r in references(text) if r.kind == "tool"}
    assert {"compile_context", "retrieve_context_source", "explain_compilation",
            "compile_transcript", "suggest_budget"} <= tools
    for risk in ('"low"', '"medium"', '"high"'):
        assert risk in text
    assert "## When not to" in text


def test_the_check_fails_on_a_tool_a_parameter_or_a_field_that_does_not_exist(surface: Surface) -> None:
    text = ("`recal(query=…)` then `recall(qurey=…)`, read `recall → memories[].idstr`, "
            "`why → nodes[].hop` is fine, `no_such_field` is not, nor `links.targets`, nor `k=…`"
            " of course, and `fliter=…` is wrong")
    problems = surface.problems(references(text))
    joined = "\n".join(problems)
    for wrong in ("no tool 'recal'", "no parameter 'qurey'", "no field 'memories.idstr'",
                  "'no_such_field'", "'links.targets'", "'fliter'"):
        assert wrong in joined, joined
    assert len(problems) == 6, joined


NOT_CALLED = {"migration_start", "migration_cancel", "migration_recover"}  # they change the store


def test_the_live_surface_is_the_served_one(surface: Surface) -> None:
    """Every served tool (docs/tools.json is generated from the same schemas) and the results of
    all but the migration controls; no skill reads a result field of a tool not called."""
    served = {t["name"] for t in json.loads(TOOLS_JSON.read_text(encoding="utf-8"))["tools"]}
    assert set(surface.params) == served
    assert set(surface.params) - set(surface.results) == NOT_CALLED
    for text in _texts().values():
        assert not {r.tool for r in references(text) if r.kind == "result"} & NOT_CALLED
    assert "memories.id_str" in surface.results["recall"]
    assert "insights.tokens_saved" in surface.results["compile_context"]
    assert "working.goal" in surface.params["save_working_context"]


def test_skills_ship_in_the_package() -> None:
    package = Path(__import__("velesmem").__file__).parent
    for name in SKILL_NAMES:
        assert (package / "agents" / "skills" / name / "SKILL.md").is_file()
    pyproject = (package.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"agents/skills/*/SKILL.md"' in pyproject and '"agents/codex/AGENTS.md"' in pyproject

"""Near-duplicates: detected on remember (same scope, same values), linked duplicate_of, and
collapsed to one representative per group in recall / recall_where / recall_fused / why."""

from __future__ import annotations

from pathlib import Path

import pytest

import velesmem
from velesmem.config import Settings
from velesmem.memory import MemoryService
from velesmem.memory import duplicates as dup

RULE = "The public API is limited to 600 requests per minute per key."
PARAPHRASE = "Rate limit for the public API: 600 requests per minute for each key."


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The suite's settings with near-duplicate collapsing on (the product default)."""
    return settings.with_overrides(dedup=True)


def _edges(mem: MemoryService, key: int) -> list[tuple[int, str]]:
    """The duplicate_of edges leaving ``key`` (other curation may add its own links)."""
    from velesmem.ids import to_i64, to_u64
    return [(to_u64(d), r) for d, r in mem.store.out_edges(to_i64(key), mem.now(), 10)
            if r == dup.RELATION]


def test_signature_values_must_agree_for_a_duplicate() -> None:
    a = dup.signature(RULE)
    assert dup.is_duplicate(a, dup.signature(PARAPHRASE))
    assert not dup.is_duplicate(a, dup.signature(PARAPHRASE.replace("600", "900")))
    assert not dup.is_duplicate(dup.signature("Kenji Sato owns the rate limiter service."),
                                dup.signature("Maria Lopez owns the rate limiter service."))
    assert not dup.is_duplicate(dup.signature("Dark mode is enabled by default."),
                                dup.signature("Dark mode is not enabled by default."))


def test_sentence_initial_name_still_matches_its_mid_sentence_twin() -> None:
    assert dup.is_duplicate(dup.signature("Chen Wei approves every schema migration."),
                            dup.signature("Every schema migration is approved by Chen Wei."))


def test_paraphrase_is_kept_and_linked_duplicate_of_the_original(mem: MemoryService) -> None:
    first = mem.remember(RULE, metadata={"project": "api"}).id
    second = mem.remember(PARAPHRASE, metadata={"project": "api"}).id
    assert second != first
    assert (first, dup.RELATION) in _edges(mem, second)
    listed = {m.id for m in mem.list_memories().memories}
    assert {first, second} <= listed  # nothing dropped


def test_near_miss_with_another_number_is_not_linked(mem: MemoryService) -> None:
    mem.remember(RULE, metadata={"project": "api"})
    changed = mem.remember(PARAPHRASE.replace("600", "900"), metadata={"project": "api"}).id
    assert _edges(mem, changed) == []


def test_other_scope_is_not_a_duplicate(mem: MemoryService) -> None:
    mem.remember(RULE, metadata={"project": "api"})
    other = mem.remember(PARAPHRASE, metadata={"project": "web"}).id
    assert _edges(mem, other) == []


def test_recall_returns_one_representative_with_the_others_ids(mem: MemoryService) -> None:
    first = mem.remember(RULE, metadata={"project": "api"}).id
    second = mem.remember(PARAPHRASE, metadata={"project": "api"}).id
    mem.remember("The rate limiter keeps its counters in Redis.", metadata={"project": "api"})
    for result in (mem.recall("rate limiter API requests per minute", k=2),
                   mem.recall_where("rate limiter API requests per minute", [], k=2),
                   mem.recall_fused("rate limiter API requests per minute", k=2)):
        ids = [m.id for m in result.memories]
        assert len(ids) == 2 and len({first, second} & set(ids)) == 1
        top = next(m for m in result.memories if m.id in (first, second))
        other = second if top.id == first else first
        assert top.duplicates == (other,)
        assert top.to_dict()["duplicates"] == [{"id": other, "id_str": str(other)}]


def test_why_folds_a_duplicate_group_into_one_node(mem: MemoryService) -> None:
    first = mem.remember(RULE, metadata={"project": "api"}).id
    second = mem.remember(PARAPHRASE, metadata={"project": "api"}).id
    result = mem.why("API requests per minute per key")
    ids = [n.id for n in result.nodes]
    assert len({first, second} & set(ids)) == 1
    node = next(n for n in result.nodes if n.id in (first, second))
    assert set(node.duplicates) == {first, second} - {node.id}
    assert all(e.relation != dup.RELATION for e in result.edges)


def test_dedup_off_neither_links_nor_collapses(store_dir: Path, clock, settings: Settings) -> None:
    with velesmem.open(store_dir, clock=clock,
                       settings=settings.with_overrides(dedup=False)).memory as mem:
        first = mem.remember(RULE).id
        second = mem.remember(PARAPHRASE).id
        assert _edges(mem, second) == []
        ids = {m.id for m in mem.recall("API requests per minute", k=5).memories}
        assert {first, second} <= ids


@pytest.mark.parametrize("raw,expected", [("project", ("project",)), ("project, team", ("project", "team")), ("", ())])
def test_scope_keys_setting_is_a_comma_list(raw: str, expected: tuple[str, ...]) -> None:
    env = {"VELESDB_MEMORY_DUPLICATE_SCOPE_KEYS": raw}
    assert Settings.from_env(env, record={}).duplicate_scope_keys == expected


def test_forgotten_original_leaves_the_new_fact_stored_unlinked(mem: MemoryService) -> None:
    first = mem.remember(RULE).id
    mem.forget(first)
    second = mem.remember(PARAPHRASE).id
    assert _edges(mem, second) == []
    assert [m.id for m in mem.list_memories().memories] == [second]


def test_dedup_setting_defaults_on_and_parses_off() -> None:
    assert Settings.from_env({}, record={}).dedup is True
    assert Settings.from_env({"VELESDB_MEMORY_DEDUP": "off"}, record={}).dedup is False


@pytest.mark.parametrize(("short", "longer"), [
    ("deploy canary pool", "deploy canary pool minimum raised after the review"),
    ("The session cache stores permanent entries.",
     "The session cache stores permanent entries. The cache is flushed on every schema migration."),
])
def test_short_fact_contained_in_a_longer_one_is_not_its_duplicate(short: str,
                                                                   longer: str) -> None:
    a, b = dup.signature(short), dup.signature(longer)
    assert not dup.is_duplicate(a, b)
    assert not dup.is_duplicate(a, b, 0.99)  # whatever the vectors say


def test_two_words_swapped_for_another_object_is_not_a_duplicate() -> None:
    assert not dup.is_duplicate(dup.signature("Kenji Sato owns the rate limiter."),
                                dup.signature("Kenji Sato owns the billing service."))
    # with a shared number the one-word rule still lets rewordings through
    assert dup.is_duplicate(dup.signature("Access tokens expire after 30 days."),
                            dup.signature("Access tokens have a lifetime of 30 days."))


def test_contained_fact_remembered_is_not_linked(mem: MemoryService) -> None:
    mem.remember("deploy canary pool", metadata={"project": "api"})
    longer = mem.remember("deploy canary pool minimum raised after the review",
                          metadata={"project": "api"}).id
    assert _edges(mem, longer) == []


def test_thresholds_follow_the_embedder_family() -> None:
    assert dup.thresholds("local:all-MiniLM-L6-v2-qint8") == dup.TUNED["local"]
    assert dup.thresholds("velesmem-hash-words-v1") == dup.TUNED["hash"]
    assert dup.thresholds("ollama:nomic-embed-text").cosine == dup.COSINE_THRESHOLD


def test_one_pattern_about_another_system_is_not_a_duplicate() -> None:
    """Facts written from one pattern about different systems share every value but the
    system's name, a common word: "billing" api and "search" api are different things."""
    assert not dup.is_duplicate(
        dup.signature("In staging the billing api times out after 30 seconds."),
        dup.signature("In staging the search api times out after 30 seconds."), 0.99)
    assert not dup.is_duplicate(
        dup.signature("In production, the memory limit of a payments store pod is 512 MB."),
        dup.signature("The inventory cache pods in production have a 512 MB memory limit."),
        0.99)
    assert not dup.is_duplicate(dup.signature("Each billing store pod gets 1024 MB."),
                                dup.signature("Each billing api pod gets 1024 MB."), 0.99)
    # the same system reworded still is (with close vectors)
    assert dup.is_duplicate(
        dup.signature("Logs of the auth gateway are kept for 30 days."),
        dup.signature("The auth gateway keeps its logs for 30 days."), 0.9)


def test_words_swapped_in_place_make_another_fact() -> None:
    assert not dup.is_duplicate(dup.signature("Use httpx, not requests, for new HTTP code."),
                                dup.signature("Use requests, not httpx, for new HTTP code."), 0.99)

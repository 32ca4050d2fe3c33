"""Entity names: people and technologies a fact names become hubs, so facts meet through them."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.extract.autograph import find_entities
from velesmem.extract.identifiers import identifier_hub_name
from velesmem.extract.names import NAME, SYSTEM, TECHNOLOGY, find_names
from velesmem.runtime import Runtime


def names(text: str) -> list[tuple[str, str]]:
    return [(n.kind, n.canonical) for n in find_names(text)]


def test_a_person_a_system_and_a_technology_are_found_in_a_project_note() -> None:
    text = "Kenji Sato owns the rate limiter; ask Kenji Sato before changing Vault policies."
    assert names(text) == [(NAME, "kenji sato"), (SYSTEM, "rate limiter"), (TECHNOLOGY, "vault")]


@pytest.mark.parametrize("text", [
    "Since December the limit is 900 requests per minute per key.",
    "The limit applies per key. After the migration it doubled.",
    "Rate Limiter Design Notes For The Quarter Review",  # a heading, not a name
    "Please Note: the deploy window moved to Friday.",
])
def test_sentence_initial_capitalised_words_are_not_names(text: str) -> None:
    assert names(text) == []


def test_an_opening_verb_or_calendar_word_is_not_part_of_the_name() -> None:
    assert names("Reviewed Maria Lopez's PR on the consumer.") == [(NAME, "maria lopez")]
    assert names("In March Kenji Sato moved to payments.") == [(NAME, "kenji sato")]
    assert names("Deploy went fine. Kenji Sato and Maria Lopez agreed.") == [
        (NAME, "kenji sato"), (NAME, "maria lopez")]


def test_technology_aliases_name_one_hub() -> None:
    assert names("Our Postgres cluster") == [(TECHNOLOGY, "postgresql")]
    assert names("runs on PostgreSQL and k8s") == [(TECHNOLOGY, "postgresql"),
                                                  (TECHNOLOGY, "kubernetes")]
    assert names("events go through kafka to redis") == [(TECHNOLOGY, "kafka"),
                                                         (TECHNOLOGY, "redis")]


def test_everyday_words_are_technologies_only_when_capitalised() -> None:
    assert names("the bank vault opened; a spark of hope") == []
    assert names("secrets live in Vault, jobs run on Spark") == [(TECHNOLOGY, "vault"),
                                                                 (TECHNOLOGY, "spark")]


def test_names_inside_paths_and_handles_are_not_taken() -> None:
    assert names("see docs/redis/setup.md and @kafka and vault.example.com") == []


def test_entities_add_names_to_identifiers_without_duplicates() -> None:
    found = {(i.kind, i.canonical) for i in find_entities(
        "Kenji Sato moved rate_limiter to RateLimiter in PR #42 using PostgreSQL")}
    assert {("symbol", "rate_limiter"), ("symbol", "ratelimiter"), ("issue", "#42"),
            ("name", "kenji sato")} <= found
    assert [c for _, c in found].count("postgresql") == 1


def test_lookup_spellings_reach_the_name_hub() -> None:
    assert identifier_hub_name("Postgres") == "postgresql"
    assert identifier_hub_name("Kenji Sato") == "kenji sato"
    assert identifier_hub_name("ADR-014") == "adr-14"
    assert identifier_hub_name("the plan") is None


def test_why_links_facts_that_share_only_a_person_and_a_service(tmp_path: Path) -> None:
    with Runtime.open(Settings(path=tmp_path)) as rt:
        rt.wait_ready_sync(30)
        m = rt.memory
        rule = m.remember("Kenji Sato set the API gateway quota to 600 requests per minute")
        rotation = m.remember("Secrets for the gateway are rotated weekly in Vault")
        owner = m.remember("Kenji Sato is on call for Vault this month")
        m.remember("lunch menu: pasta on friday")
        assert rt.autograph.wait_idle(10)
        why = m.why("what quota did we set on the API gateway", max_hops=2)
        hops = {n.id: n.hop for n in why.nodes}
        assert hops[rule.id] == 0 and hops[owner.id] == 1 and hops[rotation.id] == 2
        relations = {(e.from_, e.to): e.relation for e in why.edges}
        assert relations[(rule.id, owner.id)] == "via kenji sato"
        assert relations[(owner.id, rotation.id)] == "via vault"
        assert m.entity("Vault").found and m.entity("Kenji Sato").found
        assert m.entity("Postgres").found is False


def test_the_finder_never_raises_and_is_deterministic_on_arbitrary_text() -> None:
    rng = random.Random(26)
    alphabet = string.printable + "’•éÅ\u2028"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        assert find_names(text) == find_names(text)
    assert find_names("Aa " * 20000) == []  # one long capitalised run: a heading, no hub


def test_systems_named_by_common_nouns_become_entities() -> None:
    assert (SYSTEM, "rate limiter") in names("Kenji Sato owns the rate limiter.")
    assert (SYSTEM, "rate limiter") in names("The rate limiter service is owned by Kenji.")
    assert (SYSTEM, "billing service") in names("the billing service stores invoices")
    assert (SYSTEM, "api gateway") in names("Secrets for the API gateway rotate weekly")


@pytest.mark.parametrize("text", [
    "The new service crashed twice.", "The failed job was retried.", "the same api serves both",
    "Restart payment worker now", "the nightly job runs at 2"])
def test_a_described_system_is_not_a_name(text: str) -> None:
    assert [n for n in names(text) if n[0] == SYSTEM] == []


def test_why_links_facts_that_share_only_a_system_named_by_common_nouns(tmp_path: Path) -> None:
    with Runtime.open(Settings(path=tmp_path)) as rt:
        rt.wait_ready_sync(30)
        m = rt.memory
        quota = m.remember("Since December the rate limiter allows 900 requests a minute")
        counters = m.remember("The rate limiter keeps its counters in a sharded store")
        m.remember("lunch menu: pasta on friday")
        assert rt.autograph.wait_idle(10)
        why = m.why("how many requests does the rate limiter allow", max_hops=1)
        relations = {(e.from_, e.to): e.relation for e in why.edges}
        assert relations[(quota.id, counters.id)] == "via rate limiter"
        assert m.entity("rate limiter").found


def test_a_name_in_most_facts_stops_gaining_links(tmp_path: Path) -> None:
    """Past the idf floor a name in nearly every fact gets no more edges: it cannot connect
    everything to everything (a rare name still links its facts)."""
    with Runtime.open(Settings(path=tmp_path)) as rt:
        rt.wait_ready_sync(30)
        m = rt.memory
        for i in range(150):
            m.remember(f"deploy note {i}: the release went through Vault and ticket OPS-{i}")
        m.remember("Kenji Sato rotated the Vault root token")
        last = m.remember("Kenji Sato is on call this week")
        assert rt.autograph.wait_idle(30)
        vault = m.entity("Vault")
        assert vault.found
        hub = vault.id - (1 << 64) if vault.id >= 1 << 63 else vault.id
        assert len(rt.store.targets(hub)) < 150  # cut once its idf fell below the floor
        assert m.entity("Kenji Sato").found and last.id

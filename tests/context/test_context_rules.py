"""One test per rule id, the first-match-wins order, disabled_rules, packing order and risk."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_helpers import compile_, decision, media_fragment, png_b64
from velesmem.context.model import ALL_RULES, DISABLEABLE_RULES


def test_media_atomic_wins_over_the_cache_flag_and_packs_in_the_body() -> None:
    out = compile_([media_fragment(png_b64(30, 30), "a screenshot", metadata={"cache": True})])
    d = decision(out, 0)
    assert (d["rule_id"], d["action"]) == ("media.atomic", "preserve")
    assert [s["name"] for s in out["sections"]] == ["body"]
    assert out["sections"][0]["media"][0]["bytes_b64"] == png_b64(30, 30)


def test_media_is_never_cut_it_packs_whole_or_is_externalized() -> None:
    out = compile_([media_fragment(png_b64(300, 300), "para one\n\npara two")], budget=20)
    d = decision(out, 0)
    assert (d["action"], d["rule_id"]) == ("retrieve", "budget.externalize")
    assert out["content"] == ""


def test_preserve_marked_verbatim() -> None:
    out = compile_([{"content": "plain words here", "metadata": {"verbatim": True}}])
    assert decision(out, 0)["rule_id"] == "preserve.marked_verbatim"


def test_cache_stable_prefix_goes_first_with_action_cache() -> None:
    out = compile_(["body text about the canary", {"content": "You are the deploy assistant.", "metadata": {"cache": True}}])
    d = decision(out, 1)
    assert (d["rule_id"], d["action"]) == ("cache.stable_prefix", "cache")
    assert [s["name"] for s in out["sections"]] == ["cache", "body"]
    assert out["content"].startswith("You are the deploy assistant.\n\n")


@pytest.mark.parametrize("fragment", [
    {"content": "def f():\n    return 1", "kind": "code"},
    {"content": "see:\n```\nrm -rf build\n```"},
])
def test_preserve_code_fence(fragment: dict) -> None:
    assert decision(compile_([fragment]), 0)["rule_id"] == "preserve.code_fence"


@pytest.mark.parametrize("text", [
    "Never restart the primary during a rebalance.",
    "You must not push on Fridays.",
    "Ne jamais redémarrer la base primaire.",
    "Merci de ne pas toucher au cluster.",
])
def test_preserve_negative_constraint(text: str) -> None:
    assert decision(compile_([text]), 0)["rule_id"] == "preserve.negative_constraint"


def test_abstract_log_dedup_collapses_repeats_with_counts() -> None:
    log = "\n".join(["ERROR timeout"] * 50 + ["INFO ok"] * 3 + ["WARN slow"])
    out = compile_([{"content": log, "kind": "log"}])
    d = decision(out, 0)
    assert (d["rule_id"], d["action"]) == ("abstract.log_dedup", "abstract")
    assert out["content"] == "ERROR timeout (x50)\nINFO ok (x3)\nWARN slow"
    assert d["handle"].startswith("ctx://source/")


def test_log_timestamps_are_normalized_only_on_request_and_the_reason_says_so() -> None:
    lines = [f"2026-07-18T10:23:{i:02d}.123Z [a1b2c{i % 10}] ERROR upstream timeout" for i in range(20)]
    frag = {"content": "\n".join(lines), "kind": "log"}
    plain = compile_([frag])
    assert decision(plain, 0)["rule_id"] != "abstract.log_dedup"  # every line is distinct bytes
    norm = compile_([frag], policy={"normalize_log_timestamps": True})
    d = decision(norm, 0)
    assert d["rule_id"] == "abstract.log_dedup"
    assert "timestamps normalized before collapsing" in d["reason"]
    assert norm["content"] == lines[0] + " (x20)"  # the first occurrence's exact bytes


def test_bracketed_level_tags_are_not_masked_as_counters() -> None:
    lines = ["Jul 18 10:23:45 [ERROR] disk full", "Jul 18 10:23:46 [WARN] disk full"]
    out = compile_([{"content": "\n".join(lines), "kind": "log"}], policy={"normalize_log_timestamps": True})
    assert decision(out, 0)["rule_id"] != "abstract.log_dedup"


def test_preserve_exact_values() -> None:
    assert decision(compile_(["order 4471 shipped 2026-07-18 for 1249 EUR"]), 0)["rule_id"] == "preserve.exact_values"


def test_preserve_url() -> None:
    assert decision(compile_(["the runbook is at https://example.com/runbook"]), 0)["rule_id"] == "preserve.url"


def test_preserve_default() -> None:
    d = decision(compile_(["plain prose with nothing special"]), 0)
    assert (d["rule_id"], d["action"], d["risk"]) == ("preserve.default", "preserve", "low")


def test_drop_duplicate_keeps_the_first_and_points_to_it() -> None:
    out = compile_(["the same fact"] * 3)
    assert [d["action"] for d in out["decisions"]] == ["preserve", "drop", "drop"]
    assert decision(out, 2)["rule_id"] == "drop.duplicate"
    assert "fragment 0" in decision(out, 2)["reason"]
    assert out["content"] == "the same fact"


def test_drop_near_duplicate_after_lowercase_and_whitespace() -> None:
    out = compile_(["The Canary is  green", "the canary is\ngreen"])
    assert decision(out, 1)["rule_id"] == "drop.near_duplicate"


def test_media_dedups_on_decoded_bytes_whatever_the_caption() -> None:
    b64 = png_b64(20, 20)
    out = compile_([media_fragment(b64, "before"), media_fragment(b64, "after"), media_fragment(png_b64(21, 20), "")])
    assert [d["rule_id"] for d in out["decisions"]] == ["media.atomic", "drop.duplicate", "media.atomic"]


def test_blank_captioned_images_are_never_near_duplicates() -> None:
    out = compile_([media_fragment(png_b64(20, 20)), media_fragment(png_b64(20, 21))])
    assert {d["action"] for d in out["decisions"]} == {"preserve"}
    assert decision(out, 0).get("handle", True)
    assert out["sources"][0]["handle"] != out["sources"][1]["handle"]


def test_retrieve_screenshot_superseded_keeps_only_the_last_of_a_target() -> None:
    shots = [media_fragment(png_b64(20, 20 + i), kind="screenshot", metadata={"target": "login page"}) for i in range(3)]
    untargeted = media_fragment(png_b64(5, 5), kind="screenshot")
    out = compile_([*shots, untargeted], budget=100_000)
    assert [d["rule_id"] for d in out["decisions"]] == [
        "retrieve.screenshot_superseded", "retrieve.screenshot_superseded", "media.atomic", "media.atomic"]
    assert decision(out, 0)["action"] == "retrieve" and decision(out, 0)["risk"] == "low"
    off = compile_(shots, budget=100_000, policy={"disabled_rules": ["retrieve.screenshot_superseded"]})
    assert {d["rule_id"] for d in off["decisions"]} == {"media.atomic"}


def test_budget_externalize_sets_aside_behind_a_handle_and_raises_risk_for_critical() -> None:
    out = compile_(["Never restart the primary during a rebalance.", "plain words " * 50], budget=20)
    assert decision(out, 0)["action"] == "preserve"
    d = decision(out, 1)
    assert (d["action"], d["rule_id"], d["risk"]) == ("retrieve", "budget.externalize", "medium")
    assert out["retrieval_handles"][0]["handle"] == d["handle"]
    lost = compile_(["Never restart the primary during a rebalance."], budget=3)
    assert decision(lost, 0)["risk"] == "high" and lost["risk"] == "high"
    assert lost["warnings"]


def test_a_partially_packed_critical_fragment_is_risk_high() -> None:
    text = "Never do this.\n\n" + "\n\n".join(f"paragraph {i} with words" for i in range(20))
    out = compile_([text], budget=30)
    d = decision(out, 0)
    assert (d["action"], d["rule_id"], d["risk"]) == ("partial", "budget.externalize", "high")
    assert text.startswith(out["content"]) and out["content"]


def test_code_fences_are_atomic_when_chunking() -> None:
    fence = "```\nline one\n\nline two after a blank\n```"
    text = "intro words\n\n" + fence + "\n\noutro"
    out = compile_([{"content": text, "metadata": {"verbatim": True}}], budget=40)
    assert out["content"] in ("intro words", "intro words\n\n" + fence, text)


@pytest.mark.parametrize("rule", sorted(DISABLEABLE_RULES))
def test_every_disableable_rule_can_be_switched_off(rule: str) -> None:
    cases = {
        "media.atomic": [media_fragment(png_b64(9, 9), "cap")],
        "preserve.marked_verbatim": [{"content": "x y", "metadata": {"verbatim": True}}],
        "cache.stable_prefix": [{"content": "x y", "metadata": {"cache": True}}],
        "preserve.code_fence": [{"content": "x", "kind": "code"}],
        "preserve.negative_constraint": ["never do x"],
        "abstract.log_dedup": [{"content": "a\na", "kind": "log"}],
        "preserve.exact_values": ["1 2 3"],
        "preserve.url": ["https://x.y"],
        "drop.duplicate": ["a", "a"],
        "drop.near_duplicate": ["A", "a"],
        "retrieve.screenshot_superseded": [
            media_fragment(png_b64(9, 9), kind="screenshot", metadata={"target": "t"}),
            media_fragment(png_b64(9, 8), kind="screenshot", metadata={"target": "t"})],
    }
    on = {d["rule_id"] for d in compile_(cases[rule])["decisions"]}
    off = {d["rule_id"] for d in compile_(cases[rule], policy={"disabled_rules": [rule]})["decisions"]}
    assert rule in on and rule not in off


def test_every_rule_id_is_covered_by_this_module() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    assert all(rule in source for rule in ALL_RULES)


def test_priority_beats_relevance_and_relevance_beats_input_order() -> None:
    frags = ["alpha words here", "canary deploy words", {"content": "other words here", "priority": 5}]
    out = compile_(frags, budget=8, query="canary deploy")
    packed = [d["fragment_index"] for d in out["decisions"] if d["action"] == "preserve"]
    assert packed == [2, 1] or packed == [1, 2] or packed == [2]
    assert decision(out, 2)["action"] == "preserve"
    assert decision(out, 0)["action"] == "retrieve"


def test_the_cache_prefix_never_depends_on_the_query() -> None:
    cache = [{"content": f"system rule {i}: keep calm and deploy", "metadata": {"cache": True}} for i in range(6)]
    frags = [*cache, "volatile note about the canary", "volatile note about the rollback"]
    a = compile_(frags, budget=40, query="canary")
    b = compile_(frags, budget=40, query="rule 5 rollback deploy calm")
    assert a["sections"][0]["name"] == "cache"
    assert a["sections"][0]["content"] == b["sections"][0]["content"]


def test_ids_as_strings_rewrites_every_id_field() -> None:
    out = compile_(["a b", "a b"], policy={"ids_as_strings": True})
    for d in out["decisions"]:
        assert isinstance(d["fragment_id"], str) and isinstance(d["content_hash"], str)
    assert all(isinstance(i, str) for s in out["sources"] for i in s["fragment_ids"])
    plain = compile_(["a b"])
    assert isinstance(plain["decisions"][0]["fragment_id"], int)
    assert plain["decisions"][0]["fragment_id_str"] == str(plain["decisions"][0]["fragment_id"])


def test_caller_ids_are_kept_as_the_fragment_id() -> None:
    out = compile_([{"id": "18446744073709551615", "content": "x"}, {"id": 7, "content": "y"}])
    assert [d["fragment_id"] for d in out["decisions"]] == [18446744073709551615, 7]


def test_pricing_gives_cost_saved_by_currency_floor() -> None:
    pricing = {"version": "t", "currency": "EUR", "models": {"GPT-X": {"input_micros_per_million_tokens": 3_000_000}}}
    out = compile_(["word " * 400], budget=10, target_model="gpt-x", policy={"pricing": pricing})
    saved = out["insights"]["tokens_saved"]
    assert saved > 0
    assert out["insights"]["cost_saved_micros_by_currency"] == {"EUR": saved * 3_000_000 // 1_000_000}
    unknown = compile_(["w"], target_model="other", policy={"pricing": pricing})
    assert unknown["insights"]["cost_saved_micros_by_currency"] == {} and unknown["warnings"]


def test_the_contract_minimal_example_packs_both_fragments_at_low_risk() -> None:
    out = compile_(["The canary is green: 2% traffic, zero errors in the last 10 minutes.",
                    "Rollback runbook: kubectl rollout undo deployment/canary."], budget=500,
                   query="state of the canary deploy")
    assert [d["action"] for d in out["decisions"]] == ["preserve", "preserve"]
    assert out["risk"] == "low" and out["insights"]["tokens_saved"] == 0

"""Same request → byte-identical output in any process; golden snapshots of full responses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_helpers import compile_, media_fragment, png_b64, request
from velesmem.context.estimator import estimate_tokens

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("VELESMEM_UPDATE_GOLDEN") == "1"


def rich_request() -> dict:
    log = "\n".join(f"2026-07-18T10:23:{i % 60:02d}Z [{i:04x}] ERROR upstream timeout" for i in range(40))
    return request(
        [
            {"content": "You are the deploy assistant.", "metadata": {"cache": True}},
            "The canary runs at 2% traffic.",
            "The canary runs at 2% traffic.",
            "the canary  runs at 2% TRAFFIC.",
            {"content": log, "kind": "log"},
            {"content": "```sh\nkubectl rollout undo deployment/canary\n```", "priority": 2},
            "Never restart the primary during a rebalance.",
            "Build 48213 shipped 2026-07-18 at 10:23 with sha 3f9a2c1d.",
            "Dashboard: https://grafana.example.com/d/canary",
            "\n\n".join(f"Paragraph {i}: prose about the deploy pipeline and its many stages." for i in range(12)),
            media_fragment(png_b64(64, 48), "the dashboard", kind="screenshot", metadata={"target": "dash"}),
            media_fragment(png_b64(64, 49), "the dashboard, later", kind="screenshot", metadata={"target": "dash"}),
        ],
        budget=160,
        query="why did the canary deploy fail",
        project="veles",
        target_model="gpt-4o",
        policy={"normalize_log_timestamps": True,
                "pricing": {"version": "t1", "currency": "USD",
                            "models": {"gpt-4o": {"input_micros_per_million_tokens": 2_500_000}}}},
    )


CASES = {
    "minimal": request(["The canary is green: 2% traffic, zero errors in the last 10 minutes.",
                        "Rollback runbook: kubectl rollout undo deployment/canary."], budget=500,
                       query="state of the canary deploy"),
    "rich_tight_budget": rich_request(),
    "rich_ids_as_strings": {**rich_request(), "policy": {"ids_as_strings": True}, "token_budget": 60},
}

_CHILD = """
import json, sys
from velesmem.context.service import ContextService
req = json.load(sys.stdin)
sys.stdout.write(json.dumps(ContextService().compile_context(req), ensure_ascii=False, sort_keys=False))
"""


@pytest.mark.integration
def test_two_processes_compile_byte_identical_output() -> None:
    body = json.dumps(rich_request())
    outputs = []
    for seed in ("1", "2"):  # different hash seeds: set/dict ordering must not leak into the output
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=body, capture_output=True,
                              text=True, env=env, timeout=60, check=True)
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0] == json.dumps(compile_(**_args(rich_request())), ensure_ascii=False)


def _args(req: dict) -> dict:
    return {"fragments": req["fragments"], "budget": req["token_budget"], "query": req["query"],
            **{k: v for k, v in req.items() if k not in ("fragments", "token_budget", "query")}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_snapshot(name: str) -> None:
    got = json.dumps(compile_(**_args(CASES[name])), ensure_ascii=False, indent=1) + "\n"
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == got, f"run with VELESMEM_UPDATE_GOLDEN=1 to accept: {path}"


_texts = st.text(alphabet=st.sampled_from(list("ab cd\n\n`0123 never https://x.y 日本 é")), min_size=1, max_size=120)
_fragment = st.one_of(
    _texts.map(lambda t: {"content": t}),
    st.tuples(_texts, st.sampled_from(["log", "code", "text"])).map(lambda p: {"content": p[0], "kind": p[1]}),
    st.tuples(_texts, st.booleans()).map(lambda p: {"content": p[0], "metadata": {"cache": p[1]}}),
    st.tuples(_texts, st.integers(-3, 3)).map(lambda p: {"content": p[0], "priority": p[1]}),
    st.integers(1, 40).map(lambda w: media_fragment(png_b64(w, 20), kind="screenshot", metadata={"target": w % 3})),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragments=st.lists(_fragment, min_size=1, max_size=12), budget=st.integers(0, 200),
       query=st.sampled_from(["", "never ab", "cd 0123"]))
def test_content_fits_the_budget_and_every_fragment_gets_exactly_one_decision(fragments, budget, query) -> None:
    out = compile_(fragments, budget=budget, query=query)
    media = sum(m["tokens"] for s in out["sections"] for m in s.get("media", []))
    assert estimate_tokens(out["content"]) + media <= budget
    assert out["insights"]["tokens_out"] <= budget
    assert sorted(d["fragment_index"] for d in out["decisions"]) == list(range(len(fragments)))
    for d in out["decisions"]:
        if d["action"] in ("retrieve", "partial", "drop"):
            assert d["handle"].startswith("ctx://source/")

"""An empty compile is never silent: it says that nothing fit, the budget that would, and where the
content went — for compile_context and compile_transcript alike."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_helpers import media_fragment, png_b64, request
from velesmem.context.ingest import IngestRoots
from velesmem.context.service import ContextService
from velesmem.context.store import InMemoryContextStore

NOTHING_FIT = "nothing fit token_budget"

_texts = st.text(alphabet=st.sampled_from(list("ab cd\n\n`0123 never https://x.y 日本 é")), min_size=1, max_size=120)
_fragment = st.one_of(
    _texts.map(lambda t: {"content": t}),
    st.tuples(_texts, st.sampled_from(["log", "code", "text"])).map(lambda p: {"content": p[0], "kind": p[1]}),
    st.tuples(_texts, st.booleans()).map(lambda p: {"content": p[0], "metadata": {"cache": p[1]}}),
    st.integers(1, 40).map(lambda w: media_fragment(png_b64(w, 20), kind="screenshot", metadata={"target": w % 3})),
)


def nothing_fit_warnings(result: dict) -> list[str]:
    return [w for w in result["warnings"] if w.startswith(NOTHING_FIT)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragments=st.lists(_fragment, min_size=1, max_size=8), budget=st.integers(0, 60))
def test_empty_content_always_warns_with_the_exact_budget_that_packs(fragments, budget) -> None:
    service = ContextService()
    compilation = service.compile(request(fragments, budget))
    out = compilation.to_dict()
    if out["content"]:
        assert compilation.nothing_fit is None and nothing_fit_warnings(out) == []
        return
    empty = compilation.nothing_fit
    assert empty is not None and nothing_fit_warnings(out) == [empty.warning]
    assert f"a token_budget of {empty.min_budget} or more packs at least one" in empty.warning
    assert "retrieve_context_source" in empty.warning
    assert empty.min_budget > budget
    assert service.compile_context(request(fragments, empty.min_budget))["content"] != ""
    assert service.compile_context(request(fragments, empty.min_budget - 1))["content"] == ""


def test_compile_context_with_nothing_packed_says_so_and_every_handle_returns_the_content() -> None:
    service = ContextService(InMemoryContextStore(), IngestRoots())
    texts = ["Never restart the primary during a rebalance.", "The canary runs at 2% of traffic."]
    out = service.compile_context(request(texts, budget=3))
    assert out["content"] == "" and out["risk"] == "high"
    [warning] = nothing_fit_warnings(out)
    assert "all 2 fragment(s)" in warning and "1 of them preserve-classified (risk high)" in warning
    assert not any("did not fit the budget" in w for w in out["warnings"])  # one warning, not two
    got = sorted(service.retrieve(h["handle"])["content"] for h in out["retrieval_handles"])
    assert got == sorted(texts)


def test_compile_transcript_at_a_tiny_budget_warns_that_nothing_fit() -> None:
    service = ContextService(InMemoryContextStore(), IngestRoots())
    transcript = "System: be brief\nUser: what did we decide about the canary rollback?\nAssistant: roll back first\n"
    out = service.compile_transcript({"query": "canary", "token_budget": 2, "transcript": transcript,
                                      "segmentation": {"min_segment_bytes": 0}})
    context = out["context"]
    assert context["content"] == ""
    [warning] = nothing_fit_warnings(context)
    assert f"all {len(out['segmentation']['segments'])} fragment(s)" in warning
    need = int(warning.split("a token_budget of ")[1].split(" ")[0])
    again = service.compile_transcript({"query": "canary", "token_budget": need, "transcript": transcript,
                                        "segmentation": {"min_segment_bytes": 0}})
    assert again["context"]["content"] != "" and nothing_fit_warnings(again["context"]) == []
    recovered = "".join(service.retrieve(h["handle"])["content"] for h in context["retrieval_handles"])
    assert "roll back first" in recovered


def test_a_packed_compile_has_no_nothing_fit_warning() -> None:
    out = ContextService().compile_context(request(["short"], budget=100))
    assert out["content"] == "short" and nothing_fit_warnings(out) == []


def test_the_nothing_fit_warning_comes_first() -> None:
    out = ContextService().compile_context(request(["too long to fit"], budget=0, memory_scope={"k": 1}))
    assert out["warnings"][0].startswith(NOTHING_FIT)
    assert any("memory_scope ignored" in w for w in out["warnings"][1:])

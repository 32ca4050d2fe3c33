"""Context-compiler benchmark: compile latency and tokens saved (estimator and real cl100k).

1. Static corpus shaped like the reference's (21 fragments: 9 prose turns, 8 copies of one fact,
   a code block, a "Never …" constraint, an exact-values line, a 120-line log of 3 messages),
   compiled at budgets 400 / 800 / 1600 / 3200: p50/p95 latency of a stateless compile, and
   tokens saved as (in − out) / in by the estimator and by real cl100k (bpe-openai). "p50" re-sends
   the same request (word and hash memo caches warm, as when an agent re-sends its context each
   turn); "p50 cold" clears those caches before every compile.
2. A 12-turn agent-session replay: each turn re-sends the whole session so far (system prompt,
   user asks, file reads repeated after edits, CI logs, test output) — raw vs compiled under a
   fixed budget, everything counted with real cl100k.

Run: python3 bench/compile.py [--repeats 300] [--session-budget 2500]
"""

from __future__ import annotations

import argparse
import time

import bpe_openai
from _common import machine, median, percentile, print_table, write_results

from velesmem.context.estimator import _cached_word_tokens
from velesmem.context.service import ContextService
from velesmem.context.validate import _cached_hash

ENC = bpe_openai.get_encoding("cl100k_base")
BUDGETS = (400, 800, 1600, 3200)


def real(text: str) -> int:
    return len(ENC.encode(text))


PROSE = [
    "User: The nightly deploy of the payments service failed again and I need to understand why before the "
    "morning standup. Can you walk through the pipeline and tell me where it broke?",
    "Assistant: The pipeline builds the container, runs the unit suites, pushes to staging, then promotes "
    "the canary. The failure happened after the push, when the canary health check started timing out.",
    "User: That matches what the on-call engineer saw on the dashboard. Latency climbed for a few minutes "
    "and then the error rate spiked, so the rollout controller paused the canary automatically.",
    "Assistant: The controller pausing is the expected safety behaviour. The interesting question is why the "
    "health endpoint slowed down; the logs show the service could not reach its database primary.",
    "User: We changed the connection pool settings last week to reduce idle connections. Could that have "
    "made the new pods run out of connections during the warm-up phase of the canary?",
    "Assistant: Quite possibly. With a smaller pool, the warm-up queries queue behind each other, and the "
    "health check shares the same pool, so it times out even though the process itself is healthy.",
    "User: So the fix would be to give the health check its own small pool, or to raise the minimum pool "
    "size back to what it was before the change. Which one do you recommend for tonight?",
    "Assistant: Raise the minimum pool size for tonight because it is a one-line revert, then schedule the "
    "separate health-check pool as a follow-up so the check stops depending on query load.",
    "User: Agreed. Please also keep an eye on the replica lag while we retry, since the team mentioned a "
    "rebalance was planned for this week and I do not want both things happening at once.",
]
FACT = "The payments service connects to the database primary through the pgbouncer pool on port 6432."
CODE = """```python
def pool_settings(env: str) -> dict:
    base = {"min_size": 10, "max_size": 50, "timeout_s": 5}
    if env == "canary":
        base["min_size"] = 20  # warm-up queries need headroom
    return base
```"""
NEVER = "Never restart the database primary while a rebalance is in progress."
EXACT = "Deploy 48213 failed at 2026-07-18 02:14:07 UTC on pods payments-7d9f8-x2kq4 and payments-7d9f8-q8w2m (p99 4120 ms)."
LOG_MESSAGES = [
    "ERROR payments-api: connection refused to db-primary:6432 (pool exhausted, 20/20 in use)",
    "WARN payments-api: health check /healthz exceeded 2000ms, marking instance degraded",
    "INFO rollout-controller: canary paused at 2% traffic, waiting for manual decision",
]
LOG = "\n".join(LOG_MESSAGES[i % 3] for i in range(120))


def static_fragments() -> list[dict]:
    frags = [{"content": p} for p in PROSE]
    frags += [{"content": FACT} for _ in range(8)]
    frags += [{"content": CODE}, {"content": NEVER}, {"content": EXACT}, {"content": LOG, "kind": "log"}]
    assert len(frags) == 21
    return frags


def bench_static(repeats: int) -> list[dict]:
    service = ContextService()
    frags = static_fragments()
    real_in = sum(real(f["content"]) for f in frags)
    rows = []
    for budget in BUDGETS:
        req = {"query": "why did the payments canary deploy fail", "token_budget": budget, "fragments": frags}
        for _ in range(20):  # warm-up
            out = service.compile_context(req)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = service.compile_context(req)
            times.append((time.perf_counter() - t0) * 1000)
        cold = []
        for _ in range(max(20, repeats // 10)):  # caches cleared: every word and hash computed afresh
            _cached_word_tokens.cache_clear()
            _cached_hash.cache_clear()
            t0 = time.perf_counter()
            service.compile_context(req)
            cold.append((time.perf_counter() - t0) * 1000)
        ins = out["insights"]
        real_out = real(out["content"])
        rows.append({
            "budget": budget, "p50_ms": median(times), "p95_ms": percentile(times, 95),
            "p50_cold_ms": median(cold),
            "est_in": ins["tokens_in"], "est_out": ins["tokens_out"],
            "est_saved_pct": 100 * ins["tokens_saved"] / ins["tokens_in"],
            "real_in": real_in, "real_out": real_out, "real_saved_pct": 100 * (real_in - real_out) / real_in,
            "risk": out["risk"],
        })
    return rows


def session_turns() -> list[list[dict]]:
    """12 turns; each new turn appends what the agent saw (re-reads of files included)."""
    system = {"content": "System: You are a careful coding assistant for the payments team. Prefer small, "
                         "reversible changes and always state the exact command you ran.", "metadata": {"cache": True}}
    pool_v1 = CODE
    pool_v2 = CODE.replace('"min_size": 10', '"min_size": 16')
    test_fail = "\n".join(f"FAILED tests/test_pool.py::test_warmup_{i} - TimeoutError: pool exhausted" for i in range(3)) \
        + "\n" + "\n".join(["E   TimeoutError: pool exhausted after 5.0s"] * 30)
    ci_log = LOG
    events: list[dict] = [
        {"content": PROSE[0]},
        {"content": ci_log, "kind": "log"},
        {"content": PROSE[1]},
        {"content": pool_v1, "kind": "code"},
        {"content": PROSE[2]},
        {"content": test_fail, "kind": "log"},
        {"content": PROSE[3]},
        {"content": pool_v1, "kind": "code"},  # re-read before editing
        {"content": PROSE[4]},
        {"content": pool_v2, "kind": "code"},  # after the edit
        {"content": ci_log, "kind": "log"},  # CI re-run, same log
        {"content": PROSE[5] + "\n\n" + NEVER},
    ]
    turns = []
    for n in range(1, len(events) + 1):
        turns.append([system, *events[:n]])
    return turns


def bench_session(budget: int) -> dict:
    service = ContextService()
    raw_total = compiled_total = 0
    times = []
    per_turn = []
    for n, frags in enumerate(session_turns(), start=1):
        raw = real("\n\n".join(f["content"] for f in frags))
        t0 = time.perf_counter()
        out = service.compile_context({"query": "fix the payments canary deploy", "token_budget": budget,
                                       "fragments": frags, "policy": {"normalize_log_timestamps": True}})
        times.append((time.perf_counter() - t0) * 1000)
        compiled = real(out["content"])
        raw_total += raw
        compiled_total += compiled
        per_turn.append({"turn": n, "raw": raw, "compiled": compiled, "risk": out["risk"]})
    return {"budget": budget, "turns": len(per_turn), "raw_tokens": raw_total, "compiled_tokens": compiled_total,
            "saved_pct": 100 * (raw_total - compiled_total) / raw_total, "p50_ms": median(times),
            "per_turn": per_turn}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--session-budget", type=int, default=2500)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print("command: python3 bench/compile.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()))
    static = bench_static(args.repeats)
    print("\nStatic corpus (21 fragments), stateless compile:")
    print_table(["budget", "p50 ms", "p95 ms", "p50 cold ms", "est in→out", "est saved", "cl100k in→out", "cl100k saved", "risk"],
                [[r["budget"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}", f"{r['p50_cold_ms']:.2f}", f"{r['est_in']}→{r['est_out']}",
                  f"{r['est_saved_pct']:.1f} %", f"{r['real_in']}→{r['real_out']}", f"{r['real_saved_pct']:.1f} %",
                  r["risk"]] for r in static])
    session = bench_session(args.session_budget)
    print(f"\nAgent-session replay ({session['turns']} turns, budget {session['budget']}, cl100k):")
    print_table(["turn", "raw", "compiled", "risk"],
                [[t["turn"], t["raw"], t["compiled"], t["risk"]] for t in session["per_turn"]])
    print(f"total raw {session['raw_tokens']} → compiled {session['compiled_tokens']}: "
          f"{session['saved_pct']:.1f} % saved; p50 compile {session['p50_ms']:.2f} ms")
    path = write_results("compile", {"static": static, "session": session})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

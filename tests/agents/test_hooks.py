"""``velesdb-memory hook …`` driven with the JSON Claude Code sends (samples/) against a real
daemon: SessionStart prints the saved working context, PreCompact and Stop checkpoint into it
without touching what the agent saved, and with no daemon (or one that never answers) the hook
exits 0 within its bound and prints nothing."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Daemon, clean_env, structured

from tests.support import DEADLINE_S, deadline_scale
from tests.support.bounds import record
from velesmem.agents.hooks import (CONTEXT_CHAR_CAP, EXCERPT_CHARS, MARK, HookInput,
                                   checkpoint_entries, merge_checkpoint, parse_input,
                                   render_current)
from velesmem.agents.mcp_call import McpSession
from velesmem.agents.project import project_name
from velesmem.config import Settings
from velesmem.daemon.address import daemon_address
from velesmem.daemon.tls import client_ssl_context, tls_files

# Not ``from conftest import SAMPLES``: every conftest.py of a folder without __init__.py is the
# module "conftest", and which one that names depends on the paths pytest was given.
SAMPLES = Path(__file__).resolve().parent / "samples"
# Noted for bench/bounds.py, never asserted (a loaded machine is slow, not wrong):
BOUND_S = 3.0  # the hook's own deadline is ~2 s; interpreter start-up on top
WATCHDOG_BOUND_S = 4.0  # deadline 2 s + grace 0.5 s + interpreter start-up
DEADLINE_FLOOR_S = 1.5  # a hook that waited for its deadline took at least this
# What the hook says on stderr when the daemon never answered within its deadline.
HOOK_DEADLINE_MESSAGE = re.compile(r"deadline|timed out|gave up", re.IGNORECASE)
SESSION_CAP = 64  # VELESDB_MEMORY_HTTP_MAX_SESSIONS' default


def sample(name: str, cwd: Path | None, transcript: Path | None = None) -> dict[str, Any]:
    """A recorded hook input with its paths pointed at this test's directories."""
    data = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    if cwd is not None and "cwd" in data:
        data["cwd"] = str(cwd)
    if transcript is not None:
        data["transcript_path"] = str(transcript)
    return data


def run_hook(env: dict[str, str], event: str, payload: dict[str, Any] | bytes, cwd: Path,
             bound: str | None = None, floor_s: float = 0.0,
             ) -> tuple[subprocess.CompletedProcess[str], None]:
    """Run ``velesmem hook EVENT`` as the agent does; with ``bound`` its duration is noted for
    bench/bounds.py under that name (never asserted here)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "velesmem", "hook", event], input=raw.decode(),
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)
    if bound is not None:
        record(bound, time.monotonic() - start, BOUND_S, floor_s)
    return done, None


def context_of(done: subprocess.CompletedProcess[str]) -> str:
    out = json.loads(done.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return out["hookSpecificOutput"]["additionalContext"]


def repo(tmp_path: Path, name: str) -> Path:
    """A git work tree named ``name`` with a sub-directory the hook runs in."""
    (tmp_path / name / ".git").mkdir(parents=True)
    (tmp_path / name / "src").mkdir()
    return tmp_path / name / "src"


async def mcp(daemon: Daemon, tool: str, **arguments: Any) -> dict[str, Any]:
    async with daemon.client() as client:
        return structured(await client.call_tool(tool, arguments))


# --- pure parts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.stem for p in SAMPLES.glob("*.json")))
def test_every_recorded_input_parses(name: str, tmp_path: Path) -> None:
    event = {"SessionStart": "session-start", "PreCompact": "pre-compact", "Stop": "stop"}
    data = sample(name, tmp_path)
    inp = parse_input(json.dumps(data), event[data["hook_event_name"]], cwd="/elsewhere")
    assert inp is not None and inp.session == data["session_id"]
    assert inp.cwd == data.get("cwd", "/elsewhere")
    assert inp.transcript_path == data["transcript_path"]


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"cwd": "/x"}', b'{"session_id": ""}',
                                 b'{"session_id": 7}', b'{"session_id": "a\\nb"}'])
def test_input_that_is_not_a_hook_input_means_nothing_to_do(raw: bytes) -> None:
    assert parse_input(raw, "stop", "/x") is None


def test_project_is_the_git_work_tree_top_else_the_directory(tmp_path: Path) -> None:
    assert project_name(repo(tmp_path, "checkout")) == "checkout"
    linked = tmp_path / "linked" / "deep"
    linked.mkdir(parents=True)
    (tmp_path / "linked" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/linked\n")
    assert project_name(linked) == "linked"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_name(plain) == "plain"


def test_a_checkpoint_keeps_the_agents_entries_and_replaces_only_its_own() -> None:
    inp = parse_input(json.dumps(sample("stop", None)), "stop", "/x")
    assert inp is not None
    ours = checkpoint_entries(inp)
    assert [e["text"].startswith(MARK) for e in ours] == [True, True]
    assert inp.transcript_path in ours[0]["text"] and "soak test" in ours[1]["text"]
    saved = {"goal": "ship the retry cap", "exact_evidence": [{"text": "the 8 s timeout log",
                                                              "handle": "ctx://source/1"}],
             "decisions": [{"text": "cap at three", "memory_id": "18446744073709551557"}]}
    merged = merge_checkpoint(saved, ours)
    assert merged is not None
    assert merged["goal"] == saved["goal"] and merged["decisions"] == saved["decisions"]
    assert merged["exact_evidence"] == saved["exact_evidence"] + ours
    assert merge_checkpoint(merged, ours) is None  # the same checkpoint again changes nothing
    newer = [{"text": f"{MARK} end of the last reply: now the soak test passed"}]
    assert merge_checkpoint(merged, newer)["exact_evidence"] == saved["exact_evidence"] + newer
    assert merge_checkpoint(None, []) is None


def test_a_long_reply_keeps_its_end_and_a_long_context_is_cut_with_a_pointer() -> None:
    inp = HookInput("stop", "s", "/x", last_assistant_message="word " * 2000 + "THE END")
    text = checkpoint_entries(inp)[0]["text"]
    assert text.endswith("THE END") and len(text) < EXCERPT_CHARS + 100
    working = {"goal": "g", "verified_facts": [{"text": f"fact {i} " + "x" * 200} for i in range(100)]}
    rendered = render_current("p", "s", working, 1_800_000_000, "startup")
    assert len(rendered) <= CONTEXT_CHAR_CAP
    assert rendered.endswith('load_working_context(project="p", session="s"))')


# --- against a real daemon --------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.anyio
async def test_session_start_after_a_save_prints_that_context(daemon: Daemon, tmp_path: Path) -> None:
    cwd = repo(tmp_path, "checkout-a")
    payload = sample("session_start_startup", cwd)
    working = {"goal": "ship the upload retry cap",
               "active_constraints": [{"text": "never retry a 4xx"}],
               "decisions": [{"text": "cap at three attempts", "memory_id": "18446744073709551557"}],
               "pending_actions": ["run the nightly soak test"]}
    await mcp(daemon, "save_working_context", project="checkout-a", session=payload["session_id"],
              working=working)
    done, _ = run_hook(daemon.env, "session-start", payload, cwd,
                       bound="hook: session-start against a running daemon")
    assert done.returncode == 0, done.stderr
    text = context_of(done)
    for expected in ('project "checkout-a"', f'session "{payload["session_id"]}"',
                     "Goal: ship the upload retry cap", "- never retry a 4xx",
                     "- cap at three attempts  [memory 18446744073709551557]",
                     "- run the nightly soak test", "save_working_context(project=\"checkout-a\""):
        assert expected in text, text
    compact = run_hook(daemon.env, "session-start", sample("session_start_compact", cwd), cwd)[0]
    assert "just compacted" in context_of(compact) and "Goal: ship" in context_of(compact)


@pytest.mark.integration
@pytest.mark.anyio
async def test_a_new_session_id_lists_what_is_resumable_and_shows_the_newest(daemon: Daemon,
                                                                           tmp_path: Path) -> None:
    cwd = repo(tmp_path, "checkout-b")
    for session, goal in (("older", "the old goal"), ("newest", "the newest goal")):
        await mcp(daemon, "save_working_context", project="checkout-b", session=session,
                  working={"goal": goal})
    payload = sample("session_start_clear", cwd)
    done, _ = run_hook(daemon.env, "session-start", payload, cwd)
    text = context_of(done)
    assert f'this session ("{payload["session_id"]}")' in text
    assert text.index('- "newest"') < text.index('- "older"')
    assert "Goal: the newest goal" in text and "the old goal" not in text
    assert f'session="{payload["session_id"]}"' in text  # where to save this session's own state


@pytest.mark.integration
def test_a_project_with_nothing_saved_gets_the_names_to_save_under(daemon: Daemon,
                                                                   tmp_path: Path) -> None:
    cwd = repo(tmp_path, "fresh-project")
    payload = sample("session_start_startup", cwd)
    text = context_of(run_hook(daemon.env, "session-start", payload, cwd)[0])
    assert 'No working context is saved for project "fresh-project"' in text
    assert f'save_working_context(project="fresh-project", session="{payload["session_id"]}"' in text


@pytest.mark.integration
@pytest.mark.anyio
async def test_stop_and_pre_compact_checkpoint_without_touching_the_agents_state(
        daemon: Daemon, tmp_path: Path) -> None:
    cwd = repo(tmp_path, "checkout-c")
    transcript = tmp_path / "t.jsonl"
    stop = sample("stop", cwd, transcript)
    session = stop["session_id"]
    await mcp(daemon, "save_working_context", project="checkout-c", session=session,
              working={"goal": "ship it",
                       "exact_evidence": [{"text": "the log", "handle": "ctx://source/9"}]})
    done, _ = run_hook(daemon.env, "stop", stop, cwd, bound="hook: stop against a running daemon")
    assert done.returncode == 0 and done.stdout == "", done.stderr
    loaded = await mcp(daemon, "load_working_context", project="checkout-c", session=session)
    evidence = loaded["working"]["exact_evidence"]
    assert loaded["working"]["goal"] == "ship it"
    assert evidence[0] == {"text": "the log", "handle": "ctx://source/9"}
    assert [e["text"].startswith(MARK) for e in evidence] == [False, True, True]
    assert str(transcript) in evidence[1]["text"] and "soak test has not run" in evidence[2]["text"]
    assert run_hook(daemon.env, "stop", stop, cwd)[0].returncode == 0
    again = await mcp(daemon, "load_working_context", project="checkout-c", session=session)
    assert again["working"] == loaded["working"]  # the same stop twice: one checkpoint
    pre = run_hook(daemon.env, "pre-compact", sample("pre_compact_auto", cwd, transcript), cwd)[0]
    assert pre.returncode == 0 and pre.stdout == ""
    after = await mcp(daemon, "load_working_context", project="checkout-c", session=session)
    assert [e["text"] for e in after["working"]["exact_evidence"]] == [
        "the log", evidence[1]["text"]]  # no reply in a PreCompact input: only the transcript


@pytest.mark.integration
@pytest.mark.anyio
async def test_an_older_stop_input_without_cwd_uses_the_hooks_directory(daemon: Daemon,
                                                                       tmp_path: Path) -> None:
    cwd = repo(tmp_path, "checkout-d")
    payload = sample("stop_without_reply", None, tmp_path / "t.jsonl")
    assert run_hook(daemon.env, "stop", payload, cwd)[0].returncode == 0
    listed = await mcp(daemon, "list_working_contexts", project="checkout-d")
    assert [s["session"] for s in listed["sessions"]] == [payload["session_id"]]


@pytest.mark.integration
def test_hook_sessions_free_their_slot(daemon: Daemon) -> None:
    """More sequential hook sessions than the daemon's session cap: each one ends its own."""
    settings = Settings.from_env(daemon.env, record={})
    context = client_ssl_context(tls_files(settings.tls_dir).ca_cert)
    for n in range(SESSION_CAP + 6):
        with McpSession(daemon_address(settings), context, time.monotonic() + 5) as session:
            assert session.call("list_working_contexts", {"project": f"cap-{n}"}) == {"sessions": []}


# --- no daemon, or one that never answers --------------------------------------------------------
@pytest.mark.integration
def test_with_the_daemon_down_every_hook_exits_0_and_prints_nothing(
        make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    down = make_daemon()
    down.start()
    down.stop()  # the CA exists, nothing listens
    cwd = repo(tmp_path, "offline")
    for event, name in (("session-start", "session_start_startup"), ("pre-compact", "pre_compact_auto"),
                        ("stop", "stop")):
        done, _ = run_hook(down.env, event, sample(name, cwd), cwd,
                           bound=f"hook: {event} with the daemon down")
        assert done.returncode == 0 and done.stdout == "", (event, done)
        assert done.stderr.count("\n") <= 1


@pytest.mark.integration
def test_a_port_that_accepts_but_never_answers_cannot_hold_the_agent(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        tls = tmp_path / "tls"
        tls.mkdir()
        (tls / "ca-cert.pem").write_text(_any_ca_pem())
        env = clean_env(tmp_path, VELESDB_MEMORY_TLS_DIR=str(tls),
                        VELESDB_MEMORY_HTTP_BIND=f"127.0.0.1:{port}",
                        VELESDB_MEMORY_PATH=str(tmp_path / "store"))
        cwd = repo(tmp_path, "stuck")
        done, _ = run_hook(env, "session-start", sample("session_start_startup", cwd), cwd,
                           bound="hook: session-start against a port that never answers",
                           floor_s=DEADLINE_FLOOR_S)
    assert done.returncode == 0 and done.stdout == "", done
    assert HOOK_DEADLINE_MESSAGE.search(done.stderr), done.stderr  # it gave up at its deadline


def _any_ca_pem() -> str:
    """A real CA certificate (the TLS handshake must be the part that never completes)."""
    import tempfile

    from velesmem.daemon.tls import prepare_tls

    with tempfile.TemporaryDirectory() as scratch:
        return prepare_tls(Path(scratch)).ca_cert.read_text()


@pytest.mark.integration
def test_stdin_that_never_closes_is_cut_off_by_the_watchdog(tmp_path: Path) -> None:
    """Reading stdin has no timeout of its own: the watchdog ends the hook, silently, with 0."""
    env = clean_env(tmp_path, VELESDB_MEMORY_TLS_DIR=str(tmp_path / "tls"))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "hook", "session-start"], env=env,
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        # stdin stays open (communicate() would close it): the exit is the watchdog's doing
        proc.wait(timeout=DEADLINE_S * deadline_scale())
        record("hook: the watchdog ends a hook whose stdin never closes",
               time.monotonic() - start, WATCHDOG_BOUND_S, 2.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0 and out == b"", err
    assert b"gave up after" in err  # the watchdog's own line: it, not stdin, ended the hook

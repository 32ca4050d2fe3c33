"""``velesdb-memory hook`` never blocks the agent: Claude Code reads exit 2 as "block", so every
path — an unknown, mistyped or missing event, stray options, stdin that is not a hook input —
exits 0, prints nothing on stdout and says what went wrong in one stderr line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import clean_env

from velesmem.cli.hook import STDERR_PREFIX, canonical_event

pytestmark = pytest.mark.integration  # every test here starts the real CLI

NO_DAEMON_TLS = "tls-of-no-daemon"


def run_hook(tmp_path: Path, argv: list[str], stdin: bytes = b"{}") -> subprocess.CompletedProcess[bytes]:
    env = clean_env(tmp_path, VELESDB_MEMORY_TLS_DIR=str(tmp_path / NO_DAEMON_TLS),
                    VELESDB_MEMORY_PATH=str(tmp_path / "store"))
    return subprocess.run([sys.executable, "-m", "velesmem", "hook", *argv], input=stdin, env=env,
                          cwd=tmp_path, capture_output=True, timeout=60, check=False)


def one_stderr_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(STDERR_PREFIX), err
    return err


@pytest.mark.parametrize("argv", [["user-prompt-submit"], ["PostToolUse"], ["stopp"], []],
                         ids=["other-event", "claude-event-we-do-not-handle", "mistyped", "none"])
def test_an_unknown_mistyped_or_missing_event_exits_0_with_one_stderr_line(
        tmp_path: Path, argv: list[str]) -> None:
    done = run_hook(tmp_path, argv)
    assert done.returncode == 0 and done.stdout == b""
    err = one_stderr_line(done)
    assert ("no event given" if not argv else repr(argv[0])) in err
    assert "session-start" in err  # names what would have worked


@pytest.mark.parametrize("argv", [["--bogus"], ["-x", "stop"], ["stop", "--verbose"], ["stop", "extra"]],
                         ids=["unknown-option", "short-option-first", "option-after", "extra-word"])
def test_options_and_extra_words_that_argparse_would_reject_exit_0(tmp_path: Path,
                                                                    argv: list[str]) -> None:
    done = run_hook(tmp_path, argv)
    assert done.returncode == 0 and done.stdout == b""
    one_stderr_line(done)


@pytest.mark.parametrize("stdin", [b"", b"{", b"[1, 2]", b"\xff\xfe not utf-8", b'{"cwd": "/"}'],
                         ids=["empty", "truncated-json", "not-an-object", "binary", "no-session-id"])
def test_stdin_that_is_not_a_hook_input_exits_0_with_one_stderr_line(tmp_path: Path,
                                                                      stdin: bytes) -> None:
    done = run_hook(tmp_path, ["Stop"], stdin)
    assert done.returncode == 0 and done.stdout == b""
    assert "not a Claude Code hook input" in one_stderr_line(done)


def test_hook_help_exits_0_and_lists_the_events(tmp_path: Path) -> None:
    done = run_hook(tmp_path, ["--help"])
    assert done.returncode == 0 and b"session-start" in done.stdout


@pytest.mark.parametrize(("given", "ours"), [
    ("session-start", "session-start"), ("SessionStart", "session-start"),
    ("session_start", "session-start"), ("Stop", "stop"), ("STOP", "stop"),
    ("PreCompact", "pre-compact"), ("pre-compact", "pre-compact"),
    ("user-prompt-submit", None), ("", None), ("stopp", None)])
def test_claude_codes_own_event_names_and_any_case_name_our_events(given: str, ours: str | None) -> None:
    assert canonical_event(given) == ours

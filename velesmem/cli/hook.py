"""``velesdb-memory hook session-start|pre-compact|stop``: a Claude Code session hook.

Reads the hook's JSON on stdin and talks to the running daemon: session-start prints the
session's saved working context as additional context; pre-compact and stop save a checkpoint
(the transcript's path, the end of the last reply) into it. It never blocks the agent: it gives
up after about 2 s, and whatever goes wrong (no daemon, a timeout, odd input) it prints nothing
on stdout, one line on stderr, and exits 0. ``velesdb-memory wire`` installs the three hooks in
~/.claude/settings.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import NoReturn

GRACE_S = 0.5  # past the deadline, the watchdog ends the process whatever it is doing
STDERR_PREFIX = "[velesdb-memory] hook"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from velesmem.agents.hooks import EVENTS

    # Claude Code reads exit 2 as "block": argparse must never reject a hook's command line, so
    # the hook's parser takes no dash options (its prefix is "+") and every word lands in
    # ``words``; run() sorts them out and always exits 0.
    parser = subparsers.add_parser(
        "hook", help="a Claude Code session hook (reads its JSON on stdin; never blocks)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        prefix_chars="+", add_help=False)
    parser.add_argument("words", nargs="*", metavar="{" + ",".join(sorted(EVENTS)) + "}",
                        help="the Claude Code event this runs for (its own name, e.g. SessionStart, "
                        "works too)")
    parser.error = _usage_error  # type: ignore[method-assign]
    parser.set_defaults(handler=run, hook_help=parser.format_help)


def _usage_error(message: str) -> NoReturn:
    """A usage error is one stderr line and exit 0, like every other hook failure."""
    _note("?", f"usage: {message}")
    sys.exit(0)


def canonical_event(name: str) -> str | None:
    """Our event name for ``name``: ours (any case, ``_`` or ``-``) or Claude Code's own
    (``SessionStart``); None when it is no event we handle."""
    from velesmem.agents.hooks import EVENTS

    folded = name.strip().replace("_", "").replace("-", "").lower()
    for ours, theirs in EVENTS.items():
        if folded in (ours.replace("-", ""), theirs.lower()):
            return ours
    return None


def run(args: argparse.Namespace) -> int:
    from velesmem.agents.hooks import EVENTS, HOOK_DEADLINE_S

    words = list(args.words)
    if words and words[0] in ("-h", "--help"):
        sys.stdout.write(args.hook_help())
        return 0
    given = words[0] if words else ""
    event = canonical_event(given)
    if event is None or len(words) > 1:
        what = (f"unknown event {given!r}" if given else "no event given") if event is None \
            else f"unexpected arguments {' '.join(words[1:])!r}"
        _note(given or "?", f"{what}; expected one of {', '.join(sorted(EVENTS))}: nothing done")
        return 0
    args.event = event
    start = time.monotonic()
    deadline = start + HOOK_DEADLINE_S
    printing = threading.Lock()

    def give_up() -> None:  # a read or a call that ignores its timeout cannot hold the agent
        if printing.acquire(blocking=False):
            _note(args.event, f"gave up after {HOOK_DEADLINE_S + GRACE_S:.1f} s")
            os._exit(0)

    watchdog = threading.Timer(HOOK_DEADLINE_S + GRACE_S, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        out = _answer(args.event, deadline)
    except Exception as exc:  # noqa: BLE001 — a hook reports, it never fails the agent
        out = ""
        _note(args.event, f"{type(exc).__name__}: {exc}")
    if not printing.acquire(blocking=False):
        return 0
    watchdog.cancel()
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


def _answer(event: str, deadline: float) -> str:
    from velesmem.agents.hooks import MAX_INPUT_BYTES, answer, parse_input
    from velesmem.config import Settings

    raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    if parse_input(raw, event, os.getcwd()) is None:
        _note(event, "stdin is not a Claude Code hook input (a JSON object with a session_id): "
                     "nothing done")
        return ""
    return answer(event, raw, os.getcwd(), Settings.from_env(), deadline)


def _note(event: str, message: str) -> None:
    try:
        print(f"{STDERR_PREFIX} {event}: {' '.join(message.split())[:300]}", file=sys.stderr,
              flush=True)
    except OSError:
        pass

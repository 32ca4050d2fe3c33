"""Claude Code session hooks: what ``velesdb-memory hook session-start|pre-compact|stop`` does
with the JSON Claude Code writes on stdin, and what it prints back.

- **SessionStart** prints ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
  "additionalContext": …}}``: the working context saved for this project and session, or, when the
  session id is new, the project's resumable sessions (``list_working_contexts``) with the newest
  one's context. Either way it names the ``project`` and ``session`` to save under.
- **PreCompact** and **Stop** save a checkpoint with ``save_working_context``: the context
  already saved for the session, kept as it is, plus two entries of ``exact_evidence`` this hook
  owns (marked ``[velesdb-memory hook]``): where the transcript is, and the end of the last reply
  when Claude Code sends it. They print nothing.

The project is the name of the git work tree's top directory holding ``cwd`` (else of ``cwd``);
the session is Claude Code's ``session_id``. A hook never blocks the agent: the handlers here are
pure functions of the input and of a ``call(tool, arguments)`` function; ``velesmem.cli.hook``
runs them against the daemon within ``HOOK_DEADLINE_S`` and prints nothing when anything fails.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from velesmem.agents.project import project_name

if TYPE_CHECKING:
    from velesmem.config import Settings

SESSION_START, PRE_COMPACT, STOP = "session-start", "pre-compact", "stop"
EVENTS = {SESSION_START: "SessionStart", PRE_COMPACT: "PreCompact", STOP: "Stop"}
HOOK_DEADLINE_S = 2.0  # the whole hook, MCP calls included; then it gives up silently
CONTEXT_CHAR_CAP = 9_000  # Claude Code cuts hook context past 10,000 characters
EXCERPT_CHARS = 1_200  # how much of the last reply a checkpoint keeps (its end)
LISTED_SESSIONS = 5
MARK = "[velesdb-memory hook]"
MAX_INPUT_BYTES = 1024 * 1024  # a hook input is a few hundred bytes; anything huge is not ours
FIELDS = (("active_constraints", "Active constraints"), ("decisions", "Decisions"),
          ("verified_facts", "Verified facts"), ("open_hypotheses", "Open hypotheses"),
          ("pending_actions", "Pending actions"), ("exact_evidence", "Exact evidence"))

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class HookInput:
    """The fields of Claude Code's hook input this module reads (others are ignored)."""

    event: str
    session_id: str
    cwd: str
    transcript_path: str = ""
    source: str = ""  # SessionStart: startup, resume, clear or compact
    trigger: str = ""  # PreCompact: manual or auto
    last_assistant_message: str = ""  # Stop, in recent Claude Code versions

    @property
    def project(self) -> str:
        return project_name(Path(self.cwd))

    @property
    def session(self) -> str:
        return self.session_id


def parse_input(raw: bytes | str, event: str, cwd: str) -> HookInput | None:
    """The hook input, or None when it is not a JSON object with a session id (nothing to do).
    ``cwd`` is used when the input names none (Claude Code runs hooks in the project)."""
    if len(raw) > MAX_INPUT_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None

    def text(key: str) -> str:
        value = data.get(key)
        return value if isinstance(value, str) else ""

    session = text("session_id").strip()
    if not session or any(ord(c) < 0x20 for c in session):
        return None
    return HookInput(event=event, session_id=session, cwd=text("cwd") or cwd,
                     transcript_path=text("transcript_path"), source=text("source"),
                     trigger=text("trigger"), last_assistant_message=text("last_assistant_message"))


# --- SessionStart ---------------------------------------------------------------------------
def session_start(inp: HookInput, call: Call) -> str:
    """The JSON SessionStart prints: the additional context for this session."""
    project, session = inp.project, inp.session
    listed = call("list_working_contexts", {"project": project}).get("sessions") or []
    saved: dict[Any, Any] = {e.get("session"): e.get("saved_at") for e in listed
                             if isinstance(e, dict)}
    if session in saved:
        loaded = call("load_working_context", {"project": project, "session": session})
        text = render_current(project, session, loaded.get("working"), saved[session], inp.source)
    elif saved:
        newest = next(iter(saved))
        loaded = call("load_working_context", {"project": project, "session": newest})
        text = render_others(project, session, listed, newest, loaded.get("working"))
    else:
        text = render_nothing(project, session)
    return json.dumps({"hookSpecificOutput": {"hookEventName": EVENTS[SESSION_START],
                                              "additionalContext": text}}, ensure_ascii=False)


def _when(saved_at: Any) -> str:
    if not isinstance(saved_at, (int, float)):
        return "unknown time"
    stamp = dt.datetime.fromtimestamp(saved_at, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M UTC")


def _save_hint(project: str, session: str) -> str:
    return (f"Save this session's state with save_working_context(project={json.dumps(project)}, "
            f"session={json.dumps(session)}, working={{goal, active_constraints, decisions, "
            f"verified_facts, open_hypotheses, pending_actions, exact_evidence}}); saving replaces "
            f"the whole context, so load it, extend it and save it back.")


def render_working(working: Any) -> list[str]:
    """A working context as lines: the goal, then each non-empty list of entries."""
    if not isinstance(working, Mapping):
        return []
    lines = []
    goal = working.get("goal")
    if isinstance(goal, str) and goal.strip():
        lines.append(f"Goal: {goal.strip()}")
    for key, title in FIELDS:
        entries = [e for e in working.get(key) or [] if isinstance(e, Mapping)]
        if not entries:
            continue
        lines.append(f"{title}:")
        for entry in entries:
            refs = [f"{name} {entry[k]}" for k, name in
                    (("memory_id", "memory"), ("fragment_id", "fragment"), ("handle", "source"))
                    if entry.get(k)]
            tail = f"  [{', '.join(refs)}]" if refs else ""
            lines.append(f"- {' '.join(str(entry.get('text') or '').split())}{tail}")
    return lines


def _cap(lines: list[str], resume: str) -> str:
    """Join ``lines`` within CONTEXT_CHAR_CAP, saying how to read the rest when cut."""
    text = "\n".join(lines)
    if len(text) <= CONTEXT_CHAR_CAP:
        return text
    note = f"\n… (cut to fit the session start; the whole context: {resume})"
    return text[:CONTEXT_CHAR_CAP - len(note)].rstrip() + note


def _load_call(project: str, session: str) -> str:
    return f"load_working_context(project={json.dumps(project)}, session={json.dumps(session)})"


def render_current(project: str, session: str, working: Any, saved_at: Any, source: str) -> str:
    why = {"compact": "The conversation was just compacted. ",
           "resume": "This session is resumed. "}.get(source, "")
    lines = [f"velesdb-memory — {why}Working context of project {json.dumps(project)}, session "
             f"{json.dumps(session)}, saved {_when(saved_at)}:", ""]
    lines += render_working(working) or ["(empty)"]
    lines += ["", _save_hint(project, session)]
    return _cap(lines, _load_call(project, session))


def render_others(project: str, session: str, listed: list[Any], newest: str, working: Any) -> str:
    lines = [f"velesdb-memory — No working context is saved yet for this session "
             f"({json.dumps(session)}) of project {json.dumps(project)}. Resumable sessions of "
             f"the project, newest first:"]
    for entry in listed[:LISTED_SESSIONS]:
        if isinstance(entry, dict):
            lines.append(f"- {json.dumps(entry.get('session'))} (saved {_when(entry.get('saved_at'))})")
    if len(listed) > LISTED_SESSIONS:
        lines.append(f"- … {len(listed) - LISTED_SESSIONS} more: "
                     f"list_working_contexts(project={json.dumps(project)})")
    lines += ["", f"The newest, {json.dumps(newest)}:", ""]
    lines += render_working(working) or ["(empty)"]
    lines += ["", f"Continue from it if this is the same work; read another with "
              f"{_load_call(project, '<session>')}.", _save_hint(project, session)]
    return _cap(lines, _load_call(project, newest))


def render_nothing(project: str, session: str) -> str:
    return (f"velesdb-memory — No working context is saved for project {json.dumps(project)} yet "
            f"(this session is {json.dumps(session)}). Recall what is known before acting "
            f"(recall, why). {_save_hint(project, session)}")


# --- PreCompact and Stop ----------------------------------------------------------------------
def checkpoint_entries(inp: HookInput) -> list[dict[str, str]]:
    """The entries this hook owns in a checkpoint: the transcript's path, the last reply's end."""
    entries = []
    if inp.transcript_path:
        entries.append({"text": f"{MARK} Claude Code transcript of session {inp.session} (every "
                                f"turn, those before a compaction too): {inp.transcript_path}"})
    reply = " ".join(inp.last_assistant_message.split())
    if reply:
        excerpt = reply if len(reply) <= EXCERPT_CHARS else "…" + reply[-EXCERPT_CHARS:]
        entries.append({"text": f"{MARK} end of the last reply: {excerpt}"})
    return entries


def merge_checkpoint(working: Any, entries: list[dict[str, str]]) -> dict[str, Any] | None:
    """``working`` with our entries of ``exact_evidence`` replaced by ``entries`` (everything else
    kept as saved); None when that changes nothing."""
    base = dict(working) if isinstance(working, Mapping) else {}
    evidence = base.get("exact_evidence") or []
    theirs = [e for e in evidence
              if not (isinstance(e, Mapping) and str(e.get("text") or "").startswith(MARK))]
    merged = {**base, "exact_evidence": theirs + entries}
    if merged == base or (not base and not entries):
        return None
    return merged


def checkpoint(inp: HookInput, call: Call) -> str:
    """Save the checkpoint of this session (PreCompact, Stop); prints nothing."""
    project, session = inp.project, inp.session
    entries = checkpoint_entries(inp)
    if not entries:
        return ""
    loaded = call("load_working_context", {"project": project, "session": session})
    merged = merge_checkpoint(loaded.get("working") if loaded.get("found") else None, entries)
    if merged is not None:
        call("save_working_context", {"project": project, "session": session, "working": merged})
    return ""


HANDLERS: dict[str, Callable[[HookInput, Call], str]] = {
    SESSION_START: session_start, PRE_COMPACT: checkpoint, STOP: checkpoint}


def answer(event: str, raw: bytes, cwd: str, settings: Settings, deadline: float) -> str:
    """What the hook prints for ``event`` given its stdin ``raw``, asking the daemon the
    settings point at, by ``deadline`` (monotonic). Raises McpCallFailed when the daemon does
    not answer in time; an input that is not Claude Code's gives "" (nothing to do)."""
    from velesmem.agents.mcp_call import McpSession
    from velesmem.daemon.address import daemon_address
    from velesmem.daemon.tls import client_ssl_context, tls_files

    inp = parse_input(raw, event, cwd)
    if inp is None:
        return ""
    address = daemon_address(settings)
    ca = tls_files(settings.tls_dir).ca_cert
    context = client_ssl_context(ca) if address.scheme == "https" and ca.is_file() else None
    with McpSession(address, context, deadline, settings.auth_token) as session:
        return HANDLERS[event](inp, session.call)

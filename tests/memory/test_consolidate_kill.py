"""SIGKILL during ``consolidate --apply``: the run is one transaction with its journal, so a
killed run leaves either every ``consolidated_into`` edge and a committed journal entry, or no
edge at all (and no committed run); the store opens cleanly afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import velesmem
from velesmem.consolidate import ConsolidationService

pytestmark = pytest.mark.integration

GROUPS = 600

CHILD = textwrap.dedent("""
    import sys, time
    import velesmem
    from velesmem.consolidate import ConsolidationService
    with velesmem.open(sys.argv[1], embedder="hash") as rt:
        service = ConsolidationService(rt.store, time.time)
        preview = service.preview()
        print("planned", len(preview.changes), flush=True)
        service.apply(previewed=preview)
        print("applied", flush=True)
""")


def _archive_edges(rt: velesmem.Runtime) -> int:
    return sum(1 for e in rt.store.export(rt.clock(), include_internal=False)
               if getattr(e, "relation", None) == "consolidated_into")


def test_a_run_killed_mid_apply_leaves_all_or_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with velesmem.open(store, embedder="hash") as rt:
        for i in range(GROUPS):
            a = rt.memory.remember(f"service {i} answers on port {8000 + i}").id
            b = rt.memory.remember(f"port {8000 + i} is where service {i} answers").id
            rt.memory.relate(b, a, "duplicate_of")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen([sys.executable, "-c", CHILD, str(store)], stdout=subprocess.PIPE,
                          text=True, env=env) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.split() == ["planned", str(GROUPS)]
        child.send_signal(signal.SIGKILL)
        child.stdout.read()
        assert child.wait() == -signal.SIGKILL
    with velesmem.open(store, embedder="hash") as rt:
        edges = _archive_edges(rt)
        service = ConsolidationService(rt.store, rt.clock)
        committed = [j for j in (rt.store.get_job(p.id) for p in service.runs()) if j]
        assert edges in (0, GROUPS)
        assert all(j.state == "accepted" for j in committed)  # pending runs applied nothing
        if edges == 0:
            assert len(service.preview().changes) == GROUPS  # still all to do
            assert len(service.apply().changes) == GROUPS
            assert _archive_edges(rt) == GROUPS
        assert rt.store.verify() == []


PHASE_CHILD = textwrap.dedent("""
    import sys, time
    import velesmem
    from velesmem.consolidate import ConsolidationService

    def phase(name):
        print(name, flush=True)
        sys.stdin.readline()  # the parent kills the process here, or lets it go on

    with velesmem.open(sys.argv[1], embedder="hash") as rt:
        later = lambda: time.time() + 400 * 86_400.0  # every fact is past the decay age
        service = ConsolidationService(rt.store, later, on_phase=phase)
        report = service.apply(decay_after_days=180)
        print("run", report.run, flush=True)
        if sys.argv[2] == "undo":
            service.undo(report.run)
        print("finished", flush=True)
""")
PAIRS = 40


def _state(rt: velesmem.Runtime) -> tuple[int, int]:
    """(consolidated_into edges, facts whose confidence was decayed)."""
    facts = [f for f in rt.store.export(rt.clock(), include_internal=False)
             if not hasattr(f, "relation")]
    return _archive_edges(rt), sum(1 for f in facts if getattr(f, "confidence", 0.5) < 0.5)


@pytest.mark.parametrize(("mode", "phase"), [
    ("apply", "planned"), ("apply", "journaled"), ("apply", "applied"),
    ("undo", "undo-read"), ("undo", "undone")])
def test_a_run_killed_at_each_phase_leaves_the_store_consistent_and_resumable(
        tmp_path: Path, mode: str, phase: str) -> None:
    store = tmp_path / "store"
    with velesmem.open(store, embedder="hash") as rt:
        for i in range(PAIRS):
            a = rt.memory.remember(f"worker {i} drains queue q{i} every {i + 2} seconds").id
            b = rt.memory.remember(f"queue q{i} is drained by worker {i} each {i + 2} s").id
            rt.memory.relate(b, a, "duplicate_of")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    run = None
    with subprocess.Popen([sys.executable, "-c", PHASE_CHILD, str(store), mode],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          env=env) as child:
        assert child.stdout is not None and child.stdin is not None
        while True:
            line = child.stdout.readline().split()
            assert line, "the child ended before the phase"
            if line[0] == "run":
                run = line[1]
                continue
            if line[0] == phase:
                break
            child.stdin.write("\n")
            child.stdin.flush()
        child.send_signal(signal.SIGKILL)
        child.stdout.read()
        child.stdin.close()
        assert child.wait() == -signal.SIGKILL
    with velesmem.open(store, embedder="hash") as rt:
        assert rt.store.verify() == []
        edges, decayed = _state(rt)
        # all or nothing: the archive edges and the decays commit together
        assert (edges, decayed) in ((0, 0), (PAIRS, PAIRS))
        service = ConsolidationService(rt.store, lambda: rt.clock() + 400 * 86_400.0)
        if mode == "apply" and phase != "applied":
            assert (edges, decayed) == (0, 0)
            assert len(service.apply(decay_after_days=180).changes) == PAIRS  # resumes
            assert _state(rt) == (PAIRS, PAIRS)
        elif mode == "apply":
            assert (edges, decayed) == (PAIRS, PAIRS)
        else:
            assert run is not None
            assert (edges, decayed) == ((PAIRS, PAIRS) if phase == "undo-read" else (0, 0))
            service.undo(run)  # finishes (or repeats harmlessly) the interrupted undo
            assert _state(rt) == (0, 0)
        assert rt.store.verify() == []

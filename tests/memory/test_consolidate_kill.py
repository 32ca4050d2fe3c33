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

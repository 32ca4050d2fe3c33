"""``velesdb-memory demo``: offline and quick, the recall block lacks the ticket while the why
block reaches it at hop 2 (both chains), colour only on a terminal, nothing left behind, and the
README opens with exactly what it prints."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import DEADLINE_S, deadline_scale
from tests.support.bounds import timed
from velesmem.agents.demo import CHAINS, render, run

README = Path(__file__).resolve().parents[2] / "README.md"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
DEMO_BOUND_S = 15.0  # a few seconds here: noted for bench/bounds.py, never asserted


def demo_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VELESDB_MEMORY_") and k != "NO_COLOR"}
    env.update(TMPDIR=str(tmp), HOME=str(tmp), **extra)
    return env


def blocks(text: str) -> dict[str, list[str]]:
    """The output's blocks keyed by their first line (``recall("…")…``, ``why("…")…``)."""
    out: dict[str, list[str]] = {}
    for chunk in text.split("\n\n"):
        lines = chunk.splitlines()
        if lines:
            out[lines[0]] = lines[1:]
    return out


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    tmp = tmp_path_factory.mktemp("demo-tmp")
    with timed("demo: `velesmem demo` piped, start to exit", DEMO_BOUND_S):
        done = subprocess.run([sys.executable, "-m", "velesmem", "demo"], env=demo_env(tmp),
                              capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout, tmp


@pytest.mark.integration
def test_recall_lacks_the_ticket_and_why_has_it_at_hop_2(printed: tuple[str, Path]) -> None:
    text = printed[0]
    found = blocks(text)
    for chain in CHAINS:
        recall = next(v for k, v in found.items() if k.startswith(f'recall("{chain.question}")'))
        why = next(v for k, v in found.items() if k.startswith(f'why("{chain.question}")'))
        assert any(chain.decision in line for line in recall)
        assert not any(chain.ticket in line for line in recall), recall
        assert recall[-1].startswith(f"   └─ {chain.ticket_name} is not here")
        assert any(f"hop 2  {chain.ticket}" in line for line in why), why
        assert f"hop 0  {chain.decision}" in "\n".join(why)
        assert why[-1].endswith("at hop 2."), why
    via_identifiers = next(v for k, v in found.items() if k.startswith(f'why("{CHAINS[1].question}")'))
    assert any("← via #57" in line for line in via_identifiers)
    assert any("← via ops-88" in line for line in via_identifiers)


@pytest.mark.integration
def test_it_is_plain_when_piped_and_leaves_nothing_behind(printed: tuple[str, Path]) -> None:
    text, tmp = printed
    assert not ANSI.search(text)
    assert list(tmp.iterdir()) == []  # the temporary store is gone


def test_the_same_run_prints_the_same_text() -> None:
    assert render(run()) == render(run())


def _in_a_terminal(tmp: Path, **extra: str) -> str:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "velesmem", "demo"], env=demo_env(tmp, **extra),
                            stdin=follower, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + DEADLINE_S * deadline_scale()
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the terminal closed: the demo is done
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(leader)
    with proc:  # closes its stderr pipe
        assert proc.wait(120) == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.integration
def test_colour_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    coloured = _in_a_terminal(tmp_path)
    assert ANSI.search(coloured)
    plain = ANSI.sub("", coloured).replace("\r\n", "\n")
    assert "the walk reached EPIC-317" in plain
    assert not ANSI.search(_in_a_terminal(tmp_path, NO_COLOR="1"))


@pytest.mark.integration
def test_the_readme_opens_with_the_demo_output(printed: tuple[str, Path]) -> None:
    readme = README.read_text(encoding="utf-8")
    first_block = re.search(r"```text\n(.*?)```", readme, re.S)
    assert first_block, "README has no ```text block"
    assert readme.index("velesdb-memory demo") < readme.index("## ")  # before the first section
    assert first_block.group(1).rstrip("\n") == printed[0].rstrip("\n")

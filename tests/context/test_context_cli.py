"""``velesdb-memory compile``: compiles stdin offline and never opens the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # every test here starts a process


def run(stdin: str, *args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELESDB_MEMORY_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "velesmem", "compile", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=60)


def test_plain_stdin_is_one_fragment_and_the_budget_holds(tmp_path: Path) -> None:
    store = tmp_path / "store"
    text = "first paragraph about the canary\n\n" + "filler words " * 200
    proc = run(text, "--budget", "12", "--query", "canary", env_extra={"VELESDB_MEMORY_PATH": str(store)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "first paragraph about the canary\n"
    assert not store.exists()  # the store was never opened


def test_jsonl_stdin_gives_fragments_and_json_output() -> None:
    lines = [json.dumps({"content": "same"}), json.dumps({"content": "same"}),
             json.dumps({"content": "log\nlog", "kind": "log"})]
    proc = run("\n".join(lines) + "\n", "--budget", "100", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [d["rule_id"] for d in out["decisions"]] == ["preserve.default", "drop.duplicate", "abstract.log_dedup"]


def test_a_bad_fragment_exits_1_with_the_message() -> None:
    proc = run(json.dumps({"content": "x", "media": {"mime": "image/png", "bytes_b64": "!!"}}), "--budget", "5")
    assert proc.returncode == 1 and "not valid base64" in proc.stderr


def test_compile_cli_says_when_nothing_fits_and_exits_1() -> None:
    text = "first paragraph about the canary, long enough not to fit\n\nsecond paragraph"
    proc = run(text, "--budget", "3")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "nothing fit --budget 3" in proc.stderr and "offline compile stores no sources" in proc.stderr
    assert "retrieve_context_source" not in proc.stderr  # nothing offline could resolve a handle
    need = int(proc.stderr.split("rerun with --budget ")[1].split(" ")[0])
    assert run(text, "--budget", str(need - 1)).returncode == 1
    fits = run(text, "--budget", str(need))
    assert fits.returncode == 0 and fits.stdout.startswith("first paragraph") and fits.stderr == ""


def test_compile_cli_json_reports_nothing_fit_in_the_result_and_exits_0() -> None:
    proc = run("one fragment that cannot fit in two tokens", "--budget", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["content"] == "" and out["warnings"][0].startswith("nothing fit token_budget 2")
    assert "nothing fit --budget 2" in proc.stderr

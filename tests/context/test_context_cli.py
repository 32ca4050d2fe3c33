"""``velesdb-memory compile``: compiles stdin offline and never opens the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


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

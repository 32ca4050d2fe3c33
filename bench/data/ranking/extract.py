"""Rebuild the public retrieval subsets in this folder from git mirrors of their source repos.

    python3 bench/data/ranking/extract.py SQUAD_REPO HOTPOT_REPO

SQUAD_REPO is a clone of github.com/VinACE/san_mrc, HOTPOT_REPO one of
github.com/nakulbh/Meve-framework (README.md beside this file says why those and what they hold).
Each file is read by its git blob id, so the output is byte-for-byte what was committed here
(the HotpotQA file re-serialised compactly, its content unchanged).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SQUAD_BLOB = "e6ce8ccc5ca5f70d775930c1966f1fae2d5b956a"  # dev-v1.1.json at e2b92bf (SQuAD 2.0 dev)
HOTPOT_BLOB = "af9cf9c44eea08c632b42f3ab09c0fccb09b2520"  # data/hotpot_dev_distractor_v1.json


def blob(repo: str, sha: str) -> bytes:
    return subprocess.run(["git", "-C", repo, "cat-file", "blob", sha], check=True,
                          capture_output=True).stdout


def main() -> int:
    squad_repo, hotpot_repo = sys.argv[1:3]
    squad = json.loads(blob(squad_repo, SQUAD_BLOB))
    (HERE / "squad2_dev_5_articles.json").write_text(
        json.dumps(squad, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    hotpot = json.loads(blob(hotpot_repo, HOTPOT_BLOB))
    (HERE / "hotpot_dev_distractor_100.json").write_text(
        json.dumps(hotpot, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"SQuAD: {len(squad['data'])} articles; HotpotQA: {len(hotpot)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An overlong line in an import file: how fast ``velesdb-memory import`` refuses it, and with how
much memory (issue: a 200 MiB line took 245 s and 481 MiB before being refused).

Writes a file whose first line is a valid fact and whose second is one JSON line of ``--mib``
MiB (written in 1 MiB chunks, never held), then runs the real command in a subprocess on a
fresh store (the hash embedder) and reads its wall time and peak RSS (``wait4``). For scale, the
same command on a file whose second line is a small bad line: the process's own floor (Python,
velesmem's imports). Checks that each run exits 1 naming line 2 and leaves no store behind.
Writes bench/results/import_line.json.

Run: python3 bench/import_line.py [--mib 200] [--runs 3] [--max-line-bytes N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import median, print_table, write_results

from velesmem import limits
from velesmem.ids import fact_id

CHUNK = 1 << 20


def fact_line(text: str) -> str:
    fid = fact_id(text)
    return json.dumps({"type": "fact", "id": fid, "id_str": str(fid), "content": text,
                       "metadata": {}, "confidence": 0.5, "created_at": 1.0, "updated_at": 1.0,
                       "expires_at": None})


def write_file(path: Path, mib: int) -> None:
    """A good first line, then a fact line padded to ``mib`` MiB in its metadata."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write(fact_line("a good first line") + "\n")
        head = fact_line("the overlong line")[:-1] + ', "metadata": {"pad": "'
        fh.write(head)
        for _ in range(mib):
            fh.write("x" * CHUNK)
        fh.write('"}}\n')


def run_import(file: Path, store: Path, max_line_bytes: int | None) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB, stderr) of one ``velesdb-memory import`` run."""
    env = {**os.environ, "VELESDB_MEMORY_PATH": str(store), "VELESDB_MEMORY_EMBEDDER": "hash"}
    cmd = [sys.executable, "-m", "velesmem", "import", str(file)]
    if max_line_bytes is not None:
        cmd += ["--max-line-bytes", str(max_line_bytes)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if proc.returncode != 1 or ":2:" not in stderr or store.exists():
        raise SystemExit(f"expected a refusal of line 2 and no store; exit {proc.returncode}: "
                         f"{stderr}")
    return seconds, usage.ru_maxrss / 1024, stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-line-bytes", type=int, default=None,
                        help="passed to import (default: its own, "
                             f"{limits.MAX_IMPORT_LINE_BYTES:,})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="velesmem-import-line-") as tmp:
        base = Path(tmp)
        big, small = base / "big.jsonl", base / "small.jsonl"
        write_file(big, args.mib)
        small.write_text(fact_line("a good first line") + "\n{not json\n", encoding="utf-8")
        rows, results = [], {}
        for name, file in (("small bad line (floor)", small), (f"{args.mib} MiB line", big)):
            runs = [run_import(file, base / "store", args.max_line_bytes)
                    for _ in range(args.runs)]
            seconds = [r[0] for r in runs]
            rss = [r[1] for r in runs]
            results[name] = {"seconds": seconds, "peak_rss_mib": rss, "message": runs[0][2]}
            rows.append([name, f"{median(seconds):.2f}", f"{min(seconds):.2f}-{max(seconds):.2f}",
                         f"{median(rss):.0f}"])
    print_table(["file", "median s", "range s", "peak RSS MiB"], rows)
    print(results[f"{args.mib} MiB line"]["message"])
    write_results("import_line", {"mib": args.mib, "results": results})


if __name__ == "__main__":
    main()

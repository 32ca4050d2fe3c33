"""``velesdb-memory migrate --to EMBEDDER``: move the store to another embedder, offline.

The same job as the migration_start tool, run in this process with a progress bar: every fact
is re-embedded into a second embedding space, which then becomes the serving one. Stop the
daemon first (it holds the store), or use the migration tools through it.
"""

from __future__ import annotations

import argparse
import sys
import time


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "migrate", help="re-embed the store with another embedder (offline, with progress)",
        description=__doc__)
    parser.add_argument("--to", required=True, metavar="EMBEDDER",
                        help="the target embedder: local, ollama, openai or hash")
    parser.add_argument("--pause-budget-ms", type=int, default=1000,
                        help="longest pause admitted at cutover (default 1000; no request "
                        "waits offline)")
    parser.add_argument("--fact-batch", type=int, default=None,
                        help="facts re-embedded per batch (default 256)")
    parser.set_defaults(handler=run)


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}"


def run(args: argparse.Namespace) -> int:
    from velesmem.config import Settings
    from velesmem.runtime import Runtime, configure_logging

    configure_logging()
    settings = Settings.from_env()
    with Runtime.open(settings) as rt:
        rt.wait_ready_sync()
        total = rt.memory.memory_status().memory["facts"]
        work = {} if args.fact_batch is None else {"fact_batch": args.fact_batch}
        job = rt.migration.start(args.to, args.pause_budget_ms, **work)["job"]
        tty = sys.stderr.isatty()
        last = ""
        while True:
            job = rt.migration.status()["job"]
            line = f"{job['phase']:<15} {_bar(job['progress']['base_facts'], total)}"
            if line != last:
                print(("\r" if tty else "") + line, end="" if tty else "\n", file=sys.stderr,
                      flush=True)
                last = line
            if job["phase"] in ("committed", "cancelled") or not job["running"]:
                break
            time.sleep(0.2)
        if tty:
            print(file=sys.stderr)
    if job["phase"] != "committed":
        print(f"velesdb-memory: migration stopped in {job['phase']}: {job['last_error']}",
              file=sys.stderr)
        return 1
    target = job["target"]
    print(f"migrated {total:,} facts to {target['model']} ({target['dimension']} dims); the "
          f"cutover took {job['progress']['cutover_ms']} ms. Serve it with "
          f"VELESDB_MEMORY_EMBEDDER={args.to} (or leave the setting unset).")
    return 0

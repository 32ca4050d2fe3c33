"""``velesdb-memory consolidate [--apply | --undo RUN] [--archive-after-days N]
[--decay-after-days N]``: archive duplicate groups into one canonical fact and superseded
versions into their successor, and lower once the confidence of facts left without feedback.

Preview by default (changes nothing); ``--apply`` acts in one transaction, journaled as a run;
``--undo RUN`` removes exactly what that run added. Archiving never deletes: archived facts
leave recall and stay in export, list_memories, why and by id. Prints the run's report as JSON.
"""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "consolidate", help="preview, apply or undo a consolidation run (archives, never deletes)",
        description=__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="act on the preview (one transaction)")
    action.add_argument("--undo", metavar="RUN", help="undo the run with this id exactly")
    parser.add_argument("--archive-after-days", type=float, default=None,
                        help="archive superseded versions older than this "
                        "(default: VELESDB_MEMORY_ARCHIVE_AFTER_DAYS, 30)")
    parser.add_argument("--decay-after-days", type=float, default=None,
                        help="lower by 0.1 the confidence of facts with no feedback not written "
                        "for this long; 0: never (default: VELESDB_MEMORY_DECAY_AFTER_DAYS, 180)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import velesmem

    with velesmem.open() as runtime:
        days = runtime.settings.archive_after_days if args.archive_after_days is None \
            else args.archive_after_days
        decay = runtime.settings.decay_after_days if args.decay_after_days is None \
            else args.decay_after_days
        service = runtime.consolidation
        if args.undo is not None:
            report = service.undo(args.undo)
        elif args.apply:
            report = service.apply(days, decay)
        else:
            report = service.preview(days, decay)
    print(json.dumps(report.to_dict(), indent=2))
    return 0

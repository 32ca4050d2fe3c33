"""``velesdb-memory skills install``: copy the velesdb-memory and velesdb-context-optimizer skills
into an agent's skills directory (or ``--uninstall`` them); for Codex with ``--project``, also a
block of instructions in the project's AGENTS.md. Re-running changes nothing; every line says
what was added, updated, left unchanged or removed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

TARGET_CHOICES = ("claude", "opencode", "codex")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "skills", help="install the agent skills (Claude Code, opencode, Codex)", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="skills_command", metavar="ACTION", required=True)
    install = actions.add_parser("install", help="copy (or --uninstall) the skills", description=__doc__)
    install.add_argument("--target", action="append", choices=TARGET_CHOICES, default=None,
                         help="agent to install for (repeatable; default claude, whose skills "
                         "directory opencode also reads)")
    install.add_argument("--project", type=Path, default=None, metavar="DIR",
                         help="install into this project instead of your home directory (codex: "
                         "also writes the AGENTS.md block)")
    install.add_argument("--uninstall", action="store_true",
                         help="remove only the files and the AGENTS.md block we installed")
    install.add_argument("--summary", default=None, metavar="FILE",
                         help="append status<TAB>step<TAB>detail lines (the installer's summary)")
    install.set_defaults(handler=run_install)


def run_install(args: argparse.Namespace) -> int:
    from velesmem.agents.install import install
    from velesmem.service.options import record

    project = args.project.expanduser().absolute() if args.project else None
    if project is not None and not project.is_dir():
        print(f"velesdb-memory: error: --project {project} is not a directory")
        return 2
    refused = False
    for target in args.target or ["claude"]:
        for change in install(target, project=project, uninstall=args.uninstall):
            print(change.line())
            refused = refused or change.action == "refused"
            status = {"refused": "warning", "unchanged": "skipped", "absent": "skipped"}.get(
                change.action, "done")
            record(args, status, f"skill {change.item} ({target})",
                   " ".join(filter(None, [change.action, change.path, change.detail])))
    return 1 if refused else 0

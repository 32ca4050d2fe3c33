"""``velesdb-memory compile --budget N [--query Q]``: compile stdin offline, without the store.

Stdin is either JSONL (every non-blank line a ContextFragment object) or one plain-text
fragment. Prints the compiled content (``--json``: the whole compile_context result). When
nothing fits the budget it says so on stderr, with the budget that would, and exits 1 (0 with
``--json``, whose result is complete).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``compile`` subcommand."""
    p = subparsers.add_parser(
        "compile",
        help="compile context fragments from stdin under a token budget (offline, no store)",
        description="Compile stdin (JSONL ContextFragment objects, or one plain-text fragment) "
        "under a token budget, deterministically, without opening the memory store.",
    )
    p.add_argument("--budget", type=int, required=True, help="token_budget: hard ceiling on the output")
    p.add_argument("--query", default="", help="what the agent is working on (drives relevance)")
    p.add_argument("--project", default=None, help="project facet recorded in provenance")
    p.add_argument("--target-model", default=None, help="pricing row for cost insights")
    p.add_argument("--policy", default=None, help="CompilePolicy as a JSON object")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(handler=run_compile)


def read_fragments(text: str) -> list[dict[str, Any]]:
    """JSONL fragments when every non-blank line is a JSON object, else one plain fragment."""
    lines = [line for line in text.splitlines() if line.strip()]
    fragments: list[dict[str, Any]] = []
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            return [{"content": text}]
        if not isinstance(obj, dict):
            return [{"content": text}]
        fragments.append(obj)
    return fragments if fragments else ([{"content": text}] if text else [])


def run_compile(args: argparse.Namespace) -> int:
    """Compile stdin and print the result."""
    from velesmem.config import Settings
    from velesmem.context.ingest import IngestRoots
    from velesmem.context.service import ContextService
    from velesmem.errors import InvalidInput

    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("stdin is not UTF-8 text") from None
    request: dict[str, Any] = {
        "query": args.query,
        "token_budget": args.budget,
        "fragments": read_fragments(text),
    }
    if args.project:
        request["project"] = args.project
    if args.target_model:
        request["target_model"] = args.target_model
    if args.policy:
        try:
            request["policy"] = json.loads(args.policy)
        except ValueError:
            raise InvalidInput("--policy must be a JSON object") from None
    roots = IngestRoots.from_settings(Settings.from_env().ingest_roots)
    compilation = ContextService(store=None, roots=roots).compile(request)
    result = compilation.to_dict()
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(result["content"])
        if result["content"] and not result["content"].endswith("\n"):
            sys.stdout.write("\n")
    empty = compilation.nothing_fit
    for warning in result["warnings"]:
        if empty is None or warning != empty.warning:
            print(f"velesdb-memory compile: warning: {warning}", file=sys.stderr)
    if empty is None:
        return 0
    # Offline there is no store: the handles the compiler set everything aside behind resolve
    # nowhere, so say so and give the budget that works instead.
    print(
        f"velesdb-memory compile: nothing fit --budget {args.budget}: all {empty.fragments} "
        f"fragment(s) ({empty.tokens} tokens) were set aside, and an offline compile stores no "
        f"sources to retrieve them from; rerun with --budget {empty.min_budget} or more to get "
        "content (--json lists every decision)",
        file=sys.stderr,
    )
    return 0 if args.json else 1

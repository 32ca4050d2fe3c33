"""``velesdb-memory token create|list|revoke``: the bearer tokens the daemon accepts.

A daemon bound beyond loopback (or with VELESDB_MEMORY_HTTP_AUTH=token) requires one on every
request; its name is recorded as the author (``_veles_author``) of every memory written with it.
``create`` prints the new token once, alone on stdout (only its SHA-256 is stored: it cannot be
shown again); ``list`` shows names and dates, never tokens; ``revoke`` refuses the token from the
daemon's next request. All three work while the daemon runs. docs/auth.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from velesmem.config import Settings
    from velesmem.store import TokenStore


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "token", help="create, list or revoke the bearer tokens the daemon accepts",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="token_action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="make a token and print it once")
    create.add_argument("--name", required=True, help="who or what uses it (alice, ci, laptop): "
                        "recorded as the author of its writes; 1-64 of A-Z a-z 0-9 . _ @ -")
    actions.add_parser("list", help="names, creation and revocation dates (never the tokens)")
    revoke = actions.add_parser("revoke", help="stop accepting a token (takes effect at once)")
    revoke.add_argument("--name", required=True, help="the live token's name")
    for sub in actions.choices.values():
        sub.add_argument("--store", default=None, help="store directory (default: "
                         "VELESDB_MEMORY_PATH, else the installer record, else ~/.velesdb-memory)")
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os
    import time
    from pathlib import Path

    from velesmem.config import Settings
    from velesmem.store import open_token_store

    settings = Settings.from_env()
    if args.store:
        settings = settings.with_overrides(path=Path(os.path.expanduser(args.store)))
    now = time.time()
    if args.token_action == "create":
        from velesmem.daemon.tokens import check_name

        check_name(args.name)  # before the store is touched
    tokens = open_token_store(settings, now)
    try:
        return _ACTIONS[args.token_action](tokens, args, now, settings)
    finally:
        tokens.close()


def _create(tokens: TokenStore, args: argparse.Namespace, now: float, settings: Settings) -> int:
    from velesmem.daemon.tokens import new_token, token_digest

    token = new_token()
    tokens.put_token(args.name, token_digest(token), now)
    print(token, flush=True)
    print(f"created token {args.name!r} for store {settings.path}. It is shown only this once: "
          "keep it in a password manager. Wire a client with it: velesdb-memory wire --token "
          "<token> [--url https://HOST:PORT/mcp]", file=sys.stderr)
    return 0


def _list(tokens: TokenStore, args: argparse.Namespace, now: float, settings: Settings) -> int:
    records = tokens.tokens()
    if not records:
        print(f"no tokens in store {settings.path} (create one: velesdb-memory token create "
              "--name NAME)", file=sys.stderr)
        return 0
    width = max(4, *(len(r.name) for r in records))
    print(f"{'NAME'.ljust(width)}  {'CREATED'.ljust(20)}  STATUS")
    for r in records:
        status = "live" if r.live else f"revoked {_when(r.revoked_at)}"
        print(f"{r.name.ljust(width)}  {_when(r.created_at).ljust(20)}  {status}")
    return 0


def _revoke(tokens: TokenStore, args: argparse.Namespace, now: float, settings: Settings) -> int:
    record = tokens.revoke_token(args.name, now)
    if record is None:
        print(f"velesdb-memory: error: no live token named {args.name!r} in store "
              f"{settings.path} (see velesdb-memory token list)", file=sys.stderr)
        return 1
    print(f"revoked token {args.name!r}: a running daemon refuses it from its next request",
          file=sys.stderr)
    return 0


def _when(epoch: float | None) -> str:
    import datetime as dt

    if epoch is None:
        return ""
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


_ACTIONS = {"create": _create, "list": _list, "revoke": _revoke}

"""Command-line options shared by ``service``, ``wire``, ``trust-ca`` and ``doctor``, and the
installer's summary file (one ``status<TAB>step<TAB>detail`` line per thing done or skipped).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from velesmem.config import EMBEDDERS, ENV_PREFIX, Settings
from velesmem.config import port_number as _port
from velesmem.errors import Internal, InvalidInput
from velesmem.service.spec import DaemonSpec


def _abspath(raw: str) -> str:
    return os.path.abspath(os.path.expanduser(raw))


def add_daemon_options(parser: argparse.ArgumentParser, *, full: bool = True) -> None:
    """--port and --tls-dir always; with ``full`` the settings baked into the service too.

    Every default is "what the environment says, else what the installer recorded, else the
    built-in default", so a command run with no flags finds the installed daemon.
    """
    parser.add_argument("--port", type=_port, default=None, help="daemon port (default: from "
                        f"{ENV_PREFIX}HTTP_BIND, else the installer record, else 18090)")
    parser.add_argument("--tls-dir", default=None, help=f"the daemon's CA directory (default: "
                        f"{ENV_PREFIX}TLS_DIR, else the installer record, else ~/.velesdb-memory-tls)")
    if not full:
        return
    parser.add_argument("--store", default=None, help=f"store directory (default: {ENV_PREFIX}PATH, "
                        "else the installer record, else ~/.velesdb-memory)")
    parser.add_argument("--embedder", type=str.lower, choices=EMBEDDERS, default=None,
                        help="embedding backend (default: the environment, the installer record, "
                        "else hash)")
    parser.add_argument("--ttl", type=int, default=None, help="default TTL in seconds for new facts")
    parser.add_argument("--ollama-url", default=None, help="Ollama server for the ollama embedder")
    parser.add_argument("--ollama-model", default=None, help="Ollama embedding model")
    parser.add_argument("--extractor-model", default=None, help="model for remember_extracted")




def add_summary_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", default=None, metavar="FILE",
                        help="append status<TAB>step<TAB>detail lines (the installer's summary)")


def record(args: argparse.Namespace, status: str, step: str, detail: str = "") -> None:
    """Append one summary line when --summary was given."""
    target = getattr(args, "summary", None)
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(f"{status}\t{step}\t{' '.join(detail.split())}\n")


def port_and_tls(args: argparse.Namespace, settings: Settings | None = None) -> tuple[int, str]:
    """The daemon's port and TLS dir: the flags, else the settings (env > installer record > defaults)."""
    settings = settings or Settings.from_env()
    port = args.port if args.port is not None else settings.http_port
    tls_dir = _abspath(args.tls_dir) if args.tls_dir else str(settings.tls_dir)
    return port, tls_dir


def spec_from_args(args: argparse.Namespace) -> DaemonSpec:
    """The daemon to run as a service: flags, else the environment, else the installer record,
    else the defaults. A value the daemon would refuse at start is refused here (InvalidInput)."""
    settings = Settings.from_env()
    port, tls_dir = port_and_tls(args, settings)
    embedder = args.embedder or settings.embedder
    extra: dict[str, str] = {}
    if args.ollama_url or embedder == "ollama":
        extra[f"{ENV_PREFIX}OLLAMA_URL"] = args.ollama_url or settings.ollama_url
    if args.ollama_model or embedder == "ollama":
        extra[f"{ENV_PREFIX}OLLAMA_MODEL"] = args.ollama_model or settings.ollama_model
    if args.extractor_model:
        extra[f"{ENV_PREFIX}EXTRACTOR_MODEL"] = args.extractor_model
    spec = DaemonSpec(
        python=sys.executable,
        port=port,
        store=_abspath(args.store) if args.store else str(settings.path),
        tls_dir=tls_dir,
        embedder=embedder,
        ttl=args.ttl if args.ttl is not None else settings.default_ttl,
        extra_env=extra,
    )
    try:  # the daemon parses exactly this block at start: parse it now, before anything is written
        Settings.from_env(spec.environment(), record={})
    except Internal as exc:
        raise InvalidInput(f"refused before installing anything: {exc.message}") from None
    return spec


def ca_cert_path(tls_dir: str) -> str:
    return str(Path(tls_dir) / "ca-cert.pem")

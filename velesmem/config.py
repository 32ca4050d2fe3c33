"""Every ``VELESDB_MEMORY_*`` setting, parsed and validated once, then immutable.

``SETTINGS`` is the one table that drives ``Settings.from_env``, the CLI's ``--help`` epilog and
the settings docs: name, default, type and help live together.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from velesmem import limits
from velesmem.errors import Internal

ENV_PREFIX = "VELESDB_MEMORY_"
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})

RECALL_MODES = ("hybrid", "vector")
BACKENDS = ("sqlite", "postgres")
EXTRACTORS = ("outline", "ollama", "openai")  # velesmem.extract.BACKENDS, in step (a test)
REMOTE_EXTRACTORS = ("ollama", "openai")
AUTOGRAPH_MODES = ("off", "identifiers", "extractor")
EMBEDDERS = ("hash", "local", "ollama", "openai")
HTTP_AUTH_MODES = ("auto", "token", "proxy")  # velesmem.daemon.auth, docs/auth.md


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _parse_bool(name: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low in TRUE_WORDS:
        return True
    if low in FALSE_WORDS:
        return False
    raise Internal(f"{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off")


def _parse_positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise Internal(f"{name}={raw!r} is not an integer") from None
    if value <= 0:
        raise Internal(f"{name}={raw!r} must be a positive integer")
    return value


def _parse_every(name: str, raw: str) -> int | None:
    """An interval in whole seconds; 0 (or empty) means never."""
    if not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise Internal(f"{name}={raw!r} is not an integer number of seconds") from None
    if value < 0:
        raise Internal(f"{name}={raw!r} must be 0 (never) or a positive number of seconds")
    return value or None


def _parse_days(name: str, raw: str) -> float:
    """A non-negative number of days."""
    try:
        value = float(raw.strip())
    except ValueError:
        raise Internal(f"{name}={raw!r} is not a number of days") from None
    if not 0 <= value < float("inf"):
        raise Internal(f"{name}={raw!r} must be a number of days >= 0")
    return value


def _parse_ttl(name: str, raw: str) -> int | None:
    """A default TTL in seconds; 0 (or empty) means no default TTL."""
    if not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise Internal(f"{name}={raw!r} is not an integer number of seconds") from None
    if value < 0:
        raise Internal(f"{name}={raw!r} must be 0 (no default TTL) or a positive number of "
                       "seconds")
    if value > limits.MAX_TTL_SECONDS:
        raise Internal(f"{name}={raw!r} is over the {limits.MAX_TTL_SECONDS}-second cap")
    return value or None


def _parse_backend(name: str, raw: str) -> str:
    backend = raw.strip().lower()
    if backend not in BACKENDS:
        raise Internal(f"{name}={raw!r}: expected one of {', '.join(BACKENDS)}")
    return backend


def _parse_path(name: str, raw: str) -> Path:
    if not raw.strip():
        raise Internal(f"{name} is set but empty: unset it or give a directory")
    return Path(os.path.expanduser(raw.strip()))


def _parse_str(name: str, raw: str) -> str:
    return raw.strip()


def _parse_recall_mode(name: str, raw: str) -> str:
    mode = raw.strip().lower()
    if mode not in RECALL_MODES:
        raise Internal(f"{name}={raw!r}: expected one of {', '.join(RECALL_MODES)}")
    return mode


def _parse_extractor(name: str, raw: str) -> str | None:
    choice = raw.strip().lower()
    if not choice:
        return None
    if choice not in EXTRACTORS:
        raise Internal(f"{name}={raw!r}: expected one of {', '.join(EXTRACTORS)} (or unset it)")
    return choice


def _parse_autograph(name: str, raw: str) -> str | None:
    mode = raw.strip().lower()
    if not mode:
        return None
    if mode not in AUTOGRAPH_MODES:
        raise Internal(f"{name}={raw!r}: expected one of {', '.join(AUTOGRAPH_MODES)} "
                       "(or unset it for the default)")
    return mode
def _parse_embedder(name: str, raw: str) -> str:
    embedder = raw.strip().lower()
    if embedder not in EMBEDDERS:
        raise Internal(f"{name}={raw!r}: unknown embedder; known embedders are {', '.join(EMBEDDERS)}")
    return embedder


def _parse_http_auth(name: str, raw: str) -> str:
    mode = raw.strip().lower() or "auto"
    if mode not in HTTP_AUTH_MODES:
        raise Internal(f"{name}={raw!r}: expected one of {', '.join(HTTP_AUTH_MODES)}")
    return mode


def _parse_roots(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part for part in raw.split(os.pathsep) if part.strip())


def _parse_keys(name: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list of metadata keys (empty: one scope for every fact)."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


@dataclass(frozen=True)
class Setting:
    """One environment setting: its attribute, env suffix, parser, default and help."""

    attr: str
    env: str
    parse: Callable[[str, str], Any]
    default: Callable[[], Any]
    help: str

    @property
    def env_name(self) -> str:
        return ENV_PREFIX + self.env


SETTINGS: tuple[Setting, ...] = (
    Setting("path", "PATH", _parse_path, lambda: _home() / ".velesdb-memory",
            "Store directory (SQLite + FAISS index). Default ~/.velesdb-memory."),
    Setting("default_ttl", "DEFAULT_TTL", _parse_ttl, lambda: None,
            "Default expiry in seconds for facts remembered without ttl_seconds. Unset or 0: "
            "permanent."),
    Setting("backend", "BACKEND", _parse_backend, lambda: "sqlite",
            "Storage backend: 'sqlite' (one local store directory, default) or 'postgres'."),
    Setting("database_url", "DATABASE_URL", _parse_str, lambda: "",
            "PostgreSQL URL for the 'postgres' backend (postgresql://user:password@host/db; "
            "the pgvector extension must be enabled). A secret: shown without its password."),
    Setting("embedder", "EMBEDDER", _parse_embedder, lambda: None,
            "Embedding backend: hash (offline, deterministic), local (in-process model), ollama "
            "or openai. Unset: the one that filled the store; for a new store local when "
            "velesmem[embed] is installed, else hash."),
    Setting("recall_mode", "RECALL_MODE", _parse_recall_mode, lambda: "hybrid",
            "Ranking for recall: 'hybrid' (BM25 + vector, default) or 'vector' (vector only)."),
    Setting("dedup", "DEDUP", _parse_bool, lambda: True,
            "Near-duplicate facts: on (default) links a fact remembered in the same scope as a "
            "live fact saying the same thing duplicate_of it, and recall/why show one "
            "representative per group with the others' ids in duplicates; off does neither."),
    Setting("duplicate_scope_keys", "DUPLICATE_SCOPE_KEYS", _parse_keys, lambda: ("project",),
            "Comma-separated metadata keys that scope duplicates: two facts are compared only "
            "when these keys have the same values. Default project."),
    Setting("http", "HTTP", _parse_bool, lambda: False,
            "Serve MCP over streamable HTTPS instead of stdio (same as --http)."),
    Setting("http_bind", "HTTP_BIND", _parse_str,
            lambda: f"{limits.DEFAULT_HTTP_HOST}:{limits.DEFAULT_HTTP_PORT}",
            "Daemon bind address host:port. Default 127.0.0.1:18090."),
    Setting("http_insecure", "HTTP_INSECURE", _parse_bool, lambda: False,
            "Serve plain HTTP instead of HTTPS (loud warning). For debugging only."),
    Setting("http_allow_remote", "HTTP_ALLOW_REMOTE", _parse_bool, lambda: False,
            "Allow a non-loopback bind: needs a bearer token (velesdb-memory token create) or "
            "HTTP_AUTH=proxy."),
    Setting("http_auth", "HTTP_AUTH", _parse_http_auth, lambda: "auto",
            "Who may call /mcp: auto (loopback needs no token, any other bind does; a token sent "
            "is always checked), token (every request needs one) or proxy (an authenticating "
            "reverse proxy in front checks callers)."),
    Setting("auth_token", "AUTH_TOKEN", _parse_str, lambda: "",
            "Bearer token velesmem's own clients (stdio attach, session hooks) send to a daemon "
            "that requires one. Never logged."),
    Setting("http_max_body_bytes", "HTTP_MAX_BODY_BYTES", _parse_positive_int,
            lambda: limits.DEFAULT_HTTP_MAX_BODY_BYTES,
            "Largest /mcp request body in bytes; larger is refused with 413."),
    Setting("http_max_sessions", "HTTP_MAX_SESSIONS", _parse_positive_int,
            lambda: limits.DEFAULT_HTTP_MAX_SESSIONS,
            "Most concurrent MCP sessions. Default 64; at the cap the least recently active one with no call in flight is closed."),
    Setting("http_max_connections", "HTTP_MAX_CONNECTIONS", _parse_positive_int,
            lambda: limits.DEFAULT_HTTP_MAX_CONNECTIONS,
            "Most open HTTP connections (also kept under the descriptor limit). Default 512."),
    Setting("http_max_body_bytes_in_flight", "HTTP_MAX_BODY_BYTES_IN_FLIGHT", _parse_positive_int,
            lambda: limits.DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT,
            "Request body bytes held at once across connections; larger bodies wait, then get 503."),
    Setting("attach_reconnect_seconds", "ATTACH_RECONNECT_SECONDS", _parse_positive_int,
            lambda: limits.DEFAULT_ATTACH_RECONNECT_SECONDS,
            "Seconds a stdio client attached to the daemon keeps trying to reconnect when the "
            "daemon stops (a restart is picked up); then it exits. Default 60."),
    Setting("tls_dir", "TLS_DIR", _parse_path, lambda: _home() / ".velesdb-memory-tls",
            "Directory of the local CA and leaf certificate. Default ~/.velesdb-memory-tls."),
    Setting("ingest_roots", "INGEST_ROOTS", _parse_roots, lambda: (),
            "Directories compile_context may read path fragments from (os.pathsep-separated)."),
    Setting("ollama_url", "OLLAMA_URL", _parse_str, lambda: "http://localhost:11434",
            "Ollama server for the 'ollama' embedder."),
    Setting("ollama_model", "OLLAMA_MODEL", _parse_str, lambda: "all-minilm",
            "Ollama embedding model for the 'ollama' embedder."),
    Setting("extractor", "EXTRACTOR", _parse_extractor, lambda: None,
            "Default remember_extracted backend: outline, ollama or openai. Unset: calls name one."),
    Setting("extractor_url", "EXTRACTOR_URL", _parse_str, lambda: "http://localhost:11434",
            "Server of the ollama/openai extractor (an OpenAI-compatible base, /v1 optional)."),
    Setting("extractor_model", "EXTRACTOR_MODEL", _parse_str, lambda: "",
            "Generative model of the ollama/openai extractor; required by both."),
    Setting("extractor_api_key", "EXTRACTOR_API_KEY", _parse_str, lambda: "",
            "Bearer key sent to the extractor server (openai; optional for ollama). Never logged."),
    Setting("extractor_timeout", "EXTRACTOR_TIMEOUT", _parse_positive_int,
            lambda: limits.DEFAULT_EXTRACTOR_TIMEOUT_SECONDS,
            "Seconds one extractor model call may take. Default 300."),
    Setting("consolidate_every", "CONSOLIDATE_EVERY", _parse_every, lambda: None,
            "Seconds between the daemon's consolidation runs (archive duplicate groups and old "
            "superseded versions). Unset or 0: only `velesdb-memory consolidate` runs them."),
    Setting("archive_after_days", "ARCHIVE_AFTER_DAYS", _parse_days,
            lambda: limits.DEFAULT_ARCHIVE_AFTER_DAYS,
            "Consolidation archives superseded versions older than this many days. Default 30."),
    Setting("decay_after_days", "DECAY_AFTER_DAYS", _parse_days,
            lambda: limits.DEFAULT_DECAY_AFTER_DAYS,
            "Consolidation lowers once, by 0.1, the confidence of a fact that got no feedback "
            "and was not written for this many days (undone with its run). 0: never. "
            "Default 180."),
    Setting("autograph", "AUTOGRAPH", _parse_autograph, lambda: None,
            "Graph built from every remember: off, identifiers or extractor. Default identifiers "
            "(extractor when EXTRACTOR is ollama or openai)."),
    Setting("openai_url", "OPENAI_URL", _parse_str, lambda: "https://api.openai.com/v1",
            "Base URL of an OpenAI-compatible /v1/embeddings server for the 'openai' embedder "
            "(with or without /v1)."),
    Setting("openai_model", "OPENAI_MODEL", _parse_str, lambda: "text-embedding-3-small",
            "Embedding model for the 'openai' embedder."),
    Setting("openai_api_key", "OPENAI_API_KEY", _parse_str, lambda: "",
            "API key for the 'openai' embedder, sent as a Bearer token; never stored or logged. "
            "Unset: no Authorization header."),
)


# Settings fields no environment variable sets: the store's provenance chooses them.
INTERNAL_FIELDS = frozenset({"local_model"})


@dataclass(frozen=True)
class Settings:
    """The daemon's configuration, read once from the environment."""

    path: Path = field(default_factory=lambda: _home() / ".velesdb-memory")
    embedder: str | None = None
    default_ttl: int | None = None
    backend: str = "sqlite"
    database_url: str = field(default="", repr=False)  # a secret: never in a repr or a log
    recall_mode: str = "hybrid"
    dedup: bool = True
    duplicate_scope_keys: tuple[str, ...] = ("project",)
    http: bool = False
    http_bind: str = f"{limits.DEFAULT_HTTP_HOST}:{limits.DEFAULT_HTTP_PORT}"
    http_insecure: bool = False
    http_allow_remote: bool = False
    http_auth: str = "auto"
    auth_token: str = field(default="", repr=False)  # a secret: kept out of repr and logs
    http_max_body_bytes: int = limits.DEFAULT_HTTP_MAX_BODY_BYTES
    http_max_sessions: int = limits.DEFAULT_HTTP_MAX_SESSIONS
    http_max_connections: int = limits.DEFAULT_HTTP_MAX_CONNECTIONS
    http_max_body_bytes_in_flight: int = limits.DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT
    attach_reconnect_seconds: int = limits.DEFAULT_ATTACH_RECONNECT_SECONDS
    tls_dir: Path = field(default_factory=lambda: _home() / ".velesdb-memory-tls")
    ingest_roots: tuple[str, ...] = ()
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = "all-minilm"
    extractor: str | None = None
    extractor_url: str = "http://localhost:11434"
    extractor_model: str = ""
    extractor_api_key: str = field(default="", repr=False)  # a secret: kept out of repr/logs
    extractor_timeout: int = limits.DEFAULT_EXTRACTOR_TIMEOUT_SECONDS
    consolidate_every: int | None = None  # seconds between scheduled runs; None: never
    archive_after_days: float = limits.DEFAULT_ARCHIVE_AFTER_DAYS
    decay_after_days: float = limits.DEFAULT_DECAY_AFTER_DAYS
    autograph: str | None = None  # None: the default (see velesmem.extract.autograph_mode)
    openai_url: str = "https://api.openai.com/v1"
    openai_model: str = "text-embedding-3-small"
    openai_api_key: str = field(default="", repr=False)  # a secret: kept out of repr and logs
    local_model: str | None = None  # one of INTERNAL_FIELDS: the local graph a store records

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, record: Mapping[str, str] | None = None
    ) -> Settings:
        """Parse every setting from ``environ`` (default ``os.environ``); raise Internal on a bad one.

        What the environment leaves unset comes from ``record``, which defaults to the installer
        record (``velesmem.installed``) when reading the process environment — so every command
        finds the installed daemon — then from the defaults.
        """
        env = os.environ if environ is None else environ
        if record is None and environ is None:
            from velesmem.installed import recorded_settings

            record = recorded_settings()
        record = record or {}
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            name, raw = setting.env_name, env.get(setting.env_name)
            if raw is None and name in record:
                name, raw = f"{name} (from the installer record)", record[name]
            values[setting.attr] = setting.default() if raw is None else setting.parse(name, raw)
        return cls(**values)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (CLI flags win over the environment)."""
        return replace(self, **changes)

    @property
    def http_host(self) -> str:
        host, _, _ = self.http_bind.rpartition(":")
        return host.strip("[]") or limits.DEFAULT_HTTP_HOST

    @property
    def http_port(self) -> int:
        _, _, port = self.http_bind.rpartition(":")
        try:
            return int(port)
        except ValueError:
            raise Internal(
                f"{ENV_PREFIX}HTTP_BIND={self.http_bind!r} must be host:port, e.g. 127.0.0.1:18090"
            ) from None


def settings_help() -> str:
    """The environment section of ``--help``: every setting with its help text."""
    width = max(len(s.env_name) for s in SETTINGS)
    lines = ["environment:"]
    lines += [f"  {s.env_name.ljust(width)}  {s.help}" for s in SETTINGS]
    return "\n".join(lines)


def port_number(raw: str) -> int:
    """An argparse type for the serve flags and the service options: a TCP port 0-65535
    (0: any free port, chosen when the daemon binds)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number") from None
    if not 0 <= value < 65536:
        raise argparse.ArgumentTypeError(f"{value} is out of range 0-65535")
    return value

"""The daemon a service runs: interpreter, port, store, TLS dir, embedder, TTL — baked into units.

Every service manager (launchd, Scheduled Task, systemd, detached background) renders the same
``DaemonSpec``: one command line and one environment block of ``VELESDB_MEMORY_*`` settings.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from velesmem import limits
from velesmem.config import ENV_PREFIX

CA_CERT_FILE = "ca-cert.pem"  # written by velesmem.daemon.tls into the TLS dir


@dataclass(frozen=True)
class DaemonSpec:
    """Everything the service needs to start ``velesdb-memory --http`` the same way every time."""

    python: str
    port: int = limits.DEFAULT_HTTP_PORT
    store: str = ""
    tls_dir: str = ""
    embedder: str | None = None  # None: the store's own (or, for a new store, the default)
    ttl: int | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # ollama / extractor settings

    @property
    def host(self) -> str:
        return limits.DEFAULT_HTTP_HOST

    @property
    def argv(self) -> list[str]:
        return [self.python, "-m", "velesmem", "--http"]

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}/mcp"

    @property
    def health_url(self) -> str:
        return f"https://{self.host}:{self.port}/health"

    @property
    def ca_cert(self) -> str:
        return os.path.join(self.tls_dir, CA_CERT_FILE)

    def environment(self) -> dict[str, str]:
        """The env block baked into every unit, in a stable order."""
        env = {
            f"{ENV_PREFIX}HTTP": "1",
            f"{ENV_PREFIX}HTTP_BIND": f"{self.host}:{self.port}",
            f"{ENV_PREFIX}PATH": self.store,
            f"{ENV_PREFIX}TLS_DIR": self.tls_dir,
        }
        if self.embedder is not None:
            env[f"{ENV_PREFIX}EMBEDDER"] = self.embedder
        if self.ttl is not None:
            env[f"{ENV_PREFIX}DEFAULT_TTL"] = str(self.ttl)
        env.update(sorted(self.extra_env.items()))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> DaemonSpec:
        data: dict[str, Any] = json.loads(text)
        return cls(**data)

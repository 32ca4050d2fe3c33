"""Non-destructive edits of a client's JSON config: backup first, atomic write, refuse bad files.

The rules every client edit follows: a file that does not parse is never written (it stays
byte-identical and the edit is refused); a change first copies the file to ``<file>.bak.<epoch>``;
the new content replaces the old in one ``os.replace``; a run that would change nothing writes
nothing and makes no backup. Only our one entry is touched; every other key keeps its value.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from velesmem.errors import Internal

UTF8_BOM = b"\xef\xbb\xbf"
NEW_FILE_MODE = 0o600  # other servers' entries in these files may carry API keys


class ConfigRefused(Internal):
    """A client config exists but cannot be edited safely (not valid JSON/TOML, odd shape)."""


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def parse_json_object(path: Path, raw: bytes) -> dict[str, Any]:
    """Parse a config file's bytes as a JSON object, or raise ConfigRefused naming the problem."""
    try:
        data = json.loads(raw.decode("utf-8-sig")) if raw.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigRefused(f"{path} is not valid JSON ({exc}); left untouched — fix it by hand") from None
    if not isinstance(data, dict):
        raise ConfigRefused(f"{path} holds JSON but not an object; left untouched — fix it by hand")
    return data


def backup(path: Path, clock: Callable[[], float] = time.time) -> Path:
    """Copy ``path`` to ``<path>.bak.<epoch>`` (a numbered suffix if that name is taken)."""
    base = path.with_name(f"{path.name}.bak.{int(clock())}")
    target, n = base, 1
    while target.exists():
        target = base.with_name(f"{base.name}.{n}")
        n += 1
    shutil.copy2(path, target)
    return target


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync it, then ``os.replace`` it in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_json(data: dict[str, Any], bom: bool = False) -> bytes:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return (UTF8_BOM if bom else b"") + text.encode("utf-8")


def _container(path: Path, data: dict[str, Any], key: str, create: bool) -> dict[str, Any] | None:
    servers = data.get(key)
    if servers is None:
        if not create:
            return None
        servers = data[key] = {}
    if not isinstance(servers, dict):
        raise ConfigRefused(f"{path}: {key!r} is not an object; left untouched — fix it by hand")
    return servers


def get_json_entry(path: Path, name: str, *, key: str = "mcpServers") -> Any:
    """Our entry in ``path`` (None when the file or entry is absent); ConfigRefused if unreadable."""
    raw = read_bytes(path)
    if raw is None:
        return None
    servers = _container(path, parse_json_object(path, raw), key, create=False)
    return None if servers is None else servers.get(name)


def upsert_json_entry(
    path: Path,
    name: str,
    entry: dict[str, Any],
    *,
    key: str = "mcpServers",
    envelope: dict[str, Any] | None = None,
    clock: Callable[[], float] = time.time,
) -> tuple[str, Path | None]:
    """Set ``data[key][name] = entry``; return (added|updated|unchanged, backup path or None).

    ``envelope`` holds top-level keys a brand-new file starts with (Devin's ``version``).
    """
    raw = read_bytes(path)
    if raw is None:
        data: dict[str, Any] = dict(envelope or {})
        data[key] = {name: entry}
        atomic_write(path, dump_json(data))
        return "added", None
    data = parse_json_object(path, raw)
    servers = _container(path, data, key, create=True)
    assert servers is not None
    previous = servers.get(name)
    if previous == entry:
        return "unchanged", None
    servers[name] = entry
    saved = backup(path, clock)
    atomic_write(path, dump_json(data, bom=raw.startswith(UTF8_BOM)))
    return ("added" if previous is None else "updated"), saved


def remove_json_entry(
    path: Path, name: str, *, key: str = "mcpServers", clock: Callable[[], float] = time.time
) -> tuple[str, Path | None]:
    """Delete ``data[key][name]`` only; return (removed|absent, backup path or None)."""
    raw = read_bytes(path)
    if raw is None:
        return "absent", None
    data = parse_json_object(path, raw)
    servers = _container(path, data, key, create=False)
    if servers is None or name not in servers:
        return "absent", None
    del servers[name]
    saved = backup(path, clock)
    atomic_write(path, dump_json(data, bom=raw.startswith(UTF8_BOM)))
    return "removed", saved

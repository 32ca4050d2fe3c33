"""Path fragments: read a file off disk only from an allowlisted root, in the contract's order.

Roots come from ``VELESDB_MEMORY_INGEST_ROOTS`` (``Settings.ingest_roots``) and are canonicalised
once, when the server starts; a root that does not exist or is not a directory refuses to start.
Every error names the path the caller asked for, never what a symlink resolved to.

The checked path is then opened without following any link and without blocking, and its kind
and size are read from the opened descriptor: swapping a directory for a symlink, or the file
for a FIFO, between the check and the read is refused instead of escaping the root or hanging.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from velesmem.errors import ContextOverLimit, IngestDisabled, IngestOutsideRoots, IngestPath, Internal
from velesmem.limits import MAX_INGEST_FILE_BYTES, MAX_INGEST_FILES, MAX_INGEST_REQUEST_BYTES

_PNG_MAGIC = b"\x89PNG"
_JPEG_MAGIC = b"\xff\xd8\xff"


@dataclass(frozen=True)
class IngestRoots:
    """The canonical allowlist. Empty means path ingestion is disabled."""

    roots: tuple[Path, ...] = ()

    @classmethod
    def from_settings(cls, raw_roots: tuple[str, ...]) -> IngestRoots:
        """Canonicalise each configured root; raise Internal (refuse to start) on a bad one."""
        roots: list[Path] = []
        for raw in raw_roots:
            path = Path(os.path.expanduser(raw.strip()))
            if not path.is_absolute():
                raise Internal(f"VELESDB_MEMORY_INGEST_ROOTS entry {raw!r} must be an absolute path")
            try:
                canon = path.resolve(strict=True)
            except (OSError, RuntimeError):
                raise Internal(f"VELESDB_MEMORY_INGEST_ROOTS entry {raw!r} does not exist") from None
            if not canon.is_dir():
                raise Internal(f"VELESDB_MEMORY_INGEST_ROOTS entry {raw!r} is not a directory")
            if canon not in roots:
                roots.append(canon)
        return cls(tuple(roots))

    @property
    def enabled(self) -> bool:
        return bool(self.roots)


@dataclass
class IngestBudget:
    """Running totals of one request: files read and bytes read, against the request caps."""

    files: int = 0
    bytes: int = 0
    max_files: int = MAX_INGEST_FILES
    max_bytes: int = MAX_INGEST_REQUEST_BYTES
    _seen: list[str] = field(default_factory=list)


def check_file_count(count: int) -> None:
    """A request may reference at most MAX_INGEST_FILES path fragments."""
    if count > MAX_INGEST_FILES:
        raise ContextOverLimit(
            f"{count} path fragments; a request may reference at most {MAX_INGEST_FILES} files "
            "(MAX_INGEST_FILES)"
        )


# Opening never blocks (a FIFO would wait for a writer forever) and never makes a terminal ours.
_FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# Component-wise openat needs dir_fd support and O_NOFOLLOW (POSIX); elsewhere the canonical path
# is opened directly.
_WALK = bool(_NOFOLLOW) and os.open in os.supports_dir_fd
# A symlink met with O_NOFOLLOW: ELOOP (EMLINK on the BSDs).
_SWAPPED = frozenset({errno.ELOOP, errno.EMLINK})


def _open_canonical(canon: Path) -> int:
    """A read descriptor on ``canon``, reached one component at a time from ``/`` without
    following any symlink.

    ``canon`` was symlink-free when it was resolved and checked against the roots, so a link met
    now means something on the path was swapped since: the open fails instead of following it out
    of the root. What is read is therefore exactly the file the containment check approved.
    """
    if not _WALK:
        return os.open(canon, _FILE_FLAGS)
    parts = canon.parts
    fd = os.open(parts[0], _DIR_FLAGS)
    try:
        for part in parts[1:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError:  # Linux answers ENOTDIR, not ELOOP, for a link here
                if stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):
                    raise OSError(errno.ELOOP, "a symlink appeared on the path") from None
                raise
            os.close(fd)
            fd = child
        return os.open(parts[-1], _FILE_FLAGS | _NOFOLLOW, dir_fd=fd)
    finally:
        os.close(fd)


def _open_error(where: str, requested: str, exc: OSError) -> IngestPath:
    if exc.errno in _SWAPPED:
        return IngestPath(f"{where} {requested!r} changed while it was being opened (a link or "
                          "directory on its path was replaced); nothing was read, try again")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # ENOTDIR: a file where a directory should be
        return IngestPath(f"{where} {requested!r} does not exist")
    if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
        return IngestPath(f"{where} {requested!r} is not a regular file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return IngestPath(f"{where} {requested!r} cannot be read: permission denied")
    return IngestPath(f"{where} {requested!r} cannot be read")


def read_path(
    roots: IngestRoots,
    requested: str,
    budget: IngestBudget,
    *,
    max_file_bytes: int = MAX_INGEST_FILE_BYTES,
    where: str = "path",
) -> str:
    """The UTF-8 text of ``requested`` after the ordered checks (steps 2–6 of the contract).

    The kind and size are checked on the opened descriptor, so a file swapped for a FIFO, a
    directory or a link between the check and the read is refused, never waited on or followed.
    """
    if not roots.enabled:
        raise IngestDisabled(
            f"{where} {requested!r}: path ingestion is disabled; start the server with "
            "VELESDB_MEMORY_INGEST_ROOTS set to the directories it may read"
        )
    if not os.path.isabs(requested):
        raise IngestPath(f"{where} {requested!r} must be an absolute path")
    try:
        canon = Path(os.path.realpath(requested))
    except (OSError, ValueError):
        raise IngestPath(f"{where} {requested!r} cannot be resolved") from None
    if not any(canon.is_relative_to(root) for root in roots.roots):
        raise IngestOutsideRoots(
            f"{where} {requested!r} is outside every VELESDB_MEMORY_INGEST_ROOTS directory"
        )
    try:
        fd = _open_canonical(canon)
    except ValueError:  # an embedded NUL
        raise IngestPath(f"{where} {requested!r} cannot be read") from None
    except OSError as exc:
        raise _open_error(where, requested, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IngestPath(f"{where} {requested!r} is not a regular file")
        if st.st_size > max_file_bytes:
            raise ContextOverLimit(
                f"{where} {requested!r} is {st.st_size} bytes; the cap is {max_file_bytes} bytes per file"
            )
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object owns it now
            data = fh.read(max_file_bytes + 1)
    except OSError:
        raise IngestPath(f"{where} {requested!r} cannot be read") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > max_file_bytes:  # it grew after the size check
        raise ContextOverLimit(f"{where} {requested!r} is over the {max_file_bytes}-byte cap per file")
    budget.files += 1
    budget.bytes += len(data)
    if budget.files > budget.max_files:
        check_file_count(budget.files)
    if budget.bytes > budget.max_bytes:
        raise ContextOverLimit(
            f"path fragments total more than {budget.max_bytes} bytes (MAX_TOTAL_INGEST_BYTES) "
            "in one request"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        hint = ""
        if data.startswith((_PNG_MAGIC, _JPEG_MAGIC)):
            hint = " (it looks like a PNG/JPEG image: send it as a media fragment instead)"
        raise IngestPath(f"{where} {requested!r} is not UTF-8 text{hint}") from None


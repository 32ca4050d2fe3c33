"""The path-ingest security suite: each bad path gets its typed error; no error names a symlink target."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_helpers import png_b64, request
from velesmem import limits
from velesmem.context.ingest import IngestRoots
from velesmem.context.media import png_bytes
from velesmem.context.service import ContextService
from velesmem.errors import ContextOverLimit, IngestOutsideRoots, IngestPath, Internal, VelesmemError


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    evil = tmp_path / "root-evil"
    secret = tmp_path / "secret-place"
    for d in (root, evil, secret):
        d.mkdir()
    (root / "ok.txt").write_text("allowed text, ok", encoding="utf-8")
    (root / "sub").mkdir()
    (evil / "loot.txt").write_text("should never be read")
    (secret / "key.txt").write_text("secret material")
    (root / "escape.txt").symlink_to(secret / "key.txt")
    (root / "inside-link.txt").symlink_to(root / "ok.txt")
    (root / "big.txt").write_text("x" * (limits.MAX_INGEST_FILE_BYTES + 1))
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "shot.png").write_bytes(png_bytes(4, 4))
    return {"root": root, "evil": evil, "secret": secret}


def compile_path(tree: dict[str, Path], path: str, **frag: object) -> dict:
    service = ContextService(roots=IngestRoots.from_settings((str(tree["root"]),)))
    return service.compile_context(request([{"path": path, **frag}]))


def error_for(tree: dict[str, Path], path: str, **frag: object) -> VelesmemError:
    with pytest.raises(VelesmemError) as info:
        compile_path(tree, path, **frag)
    return info.value


def test_a_file_under_the_root_is_read_and_a_symlink_inside_the_root_is_allowed(tree) -> None:
    assert compile_path(tree, str(tree["root"] / "ok.txt"))["content"] == "allowed text, ok"
    assert compile_path(tree, str(tree["root"] / "inside-link.txt"))["content"] == "allowed text, ok"


def test_relative_path(tree) -> None:
    assert type(error_for(tree, "root/ok.txt")) is IngestPath


def test_dot_dot_escape(tree) -> None:
    err = error_for(tree, str(tree["root"] / ".." / "secret-place" / "key.txt"))
    assert type(err) is IngestOutsideRoots


def test_symlink_escaping_the_root_never_names_its_target(tree) -> None:
    asked = str(tree["root"] / "escape.txt")
    err = error_for(tree, asked)
    assert type(err) is IngestOutsideRoots
    assert asked in err.message
    assert "secret" not in err.message and "key.txt" not in err.message


def test_sibling_directory_sharing_a_name_prefix(tree) -> None:
    assert type(error_for(tree, str(tree["evil"] / "loot.txt"))) is IngestOutsideRoots


def test_directory(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "sub"))) is IngestPath


def test_missing_file(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "nope.txt"))) is IngestPath
    err = error_for(tree, str(tree["root"] / "ok.txt" / "below-a-file.txt"))
    assert type(err) is IngestPath and "does not exist" in err.message


def test_oversized_file_is_refused_before_reading(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "big.txt"))) is ContextOverLimit


def test_non_utf8(tree) -> None:
    err = error_for(tree, str(tree["root"] / "latin1.txt"))
    assert type(err) is IngestPath and "UTF-8" in err.message


def test_png_bytes_get_a_media_hint(tree) -> None:
    err = error_for(tree, str(tree["root"] / "shot.png"))
    assert type(err) is IngestPath and "media fragment" in err.message


def test_path_with_content_or_media_is_refused_even_when_ingest_is_off(tree) -> None:
    for extra in ({"content": "x"}, {"media": {"mime": "image/png", "bytes_b64": png_b64(2, 2)}}):
        with pytest.raises(IngestPath, match="cannot also carry"):
            ContextService().compile_context(request([{"path": "/x", **extra}]))


def test_a_bad_root_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for bad in (str(tmp_path / "missing"), str(tmp_path / "file"), "relative/dir"):
        with pytest.raises(Internal):
            IngestRoots.from_settings((bad,))


def test_a_symlink_target_is_never_revealed_anywhere_in_the_message(tree) -> None:
    link = tree["root"] / "dangling.txt"
    os.symlink(tree["secret"] / "missing-target.txt", link)
    err = error_for(tree, str(link))
    assert "secret" not in err.message and "missing-target" not in err.message


# --- races and special files --------------------------------------------------------------------

needs_posix = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and component-wise openat are POSIX")
CALL_DEADLINE_S = 5.0
SWAP_CALLS = 20_000  # upper bound on calls racing a swapping thread (about 0.1 ms each)
SWAP_SECONDS = 3.0  # and on the time spent racing it
ENOUGH_OF_EACH = 1000  # stop early once both outcomes of the race were seen this often


def run_with_deadline(fn: Callable[[], Any], release: Callable[[], None], deadline_s: float = CALL_DEADLINE_S) -> Any:
    """Run ``fn`` in a thread; fail (after unblocking it with ``release``) if it outlives the deadline."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 — handed back to the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        release()
        worker.join(CALL_DEADLINE_S)
        raise AssertionError(f"the call was still blocked after {deadline_s} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def open_writer(fifo: Path) -> Callable[[], None]:
    """A release: opening the FIFO for writing wakes a reader blocked in open()."""

    def release() -> None:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    return release


@needs_posix
def test_fifo_in_ingest_root_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    fifo = root / "pipe.log"
    os.mkfifo(fifo)
    service = ContextService(roots=IngestRoots.from_settings((str(root),)))
    calls = (
        lambda: service.compile_context(request([{"path": str(fifo)}])),
        lambda: service.compile_transcript({"query": "q", "token_budget": 100, "path": str(fifo)}),
    )
    for call in calls:
        with pytest.raises(IngestPath, match="not a regular file"):
            run_with_deadline(call, open_writer(fifo))


@needs_posix
def test_a_fifo_is_judged_on_its_opened_descriptor_not_on_its_path(tmp_path: Path, monkeypatch) -> None:
    """The swap frozen at its worst instant: any look at the path says "regular file", and the
    thing opened is a FIFO with no writer."""
    root = tmp_path / "root"
    root.mkdir()
    fifo, regular = root / "pipe.log", root / "regular.txt"
    os.mkfifo(fifo)
    regular.write_text("x")
    real_stat = os.stat

    def lying_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if os.fspath(path) == str(fifo) else path, *args, **kwargs)

    service = ContextService(roots=IngestRoots.from_settings((str(root),)))
    monkeypatch.setattr(os, "stat", lying_stat)
    with pytest.raises(IngestPath, match="not a regular file"):
        run_with_deadline(lambda: service.compile_context(request([{"path": str(fifo)}])), open_writer(fifo))


@needs_posix
def test_a_file_swapped_for_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    target = root / "notes.txt"
    target.write_text("regular text")
    fifo = root / "fifo-keep"  # one FIFO inode, linked in and out, so a blocked reader can be woken
    os.mkfifo(fifo)
    staged_fifo, staged_file = root / "fifo-staged", root / "file-staged"
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            staged_file.write_text("regular text")
            os.link(fifo, staged_fifo)
            os.replace(staged_fifo, target)
            os.replace(staged_file, target)
            swaps += 1

    service = ContextService(roots=IngestRoots.from_settings((str(root),)))
    outcomes: Counter[str] = Counter()

    def calls() -> None:  # bounded: until both outcomes were seen often, or the caps
        end = time.monotonic() + SWAP_SECONDS
        for _ in range(SWAP_CALLS):
            if time.monotonic() > end or min(outcomes["read"], outcomes["refused"]) >= ENOUGH_OF_EACH:
                break
            try:
                assert service.compile_context(request([{"path": str(target)}]))["content"] == "regular text"
                outcomes["read"] += 1
            except IngestPath as exc:
                outcomes["refused"] += 1
                assert "not a regular file" in exc.message or "does not exist" in exc.message

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        # A blocked call never returns: past the racing time plus a deadline, it is stuck.
        run_with_deadline(calls, lambda: (stop.set(), swapper.join(), open_writer(fifo)()),
                          SWAP_SECONDS + CALL_DEADLINE_S)
    finally:
        stop.set()
        swapper.join()
    assert swaps > 0 and outcomes["read"] > 0 and outcomes["refused"] > 0, (swaps, outcomes)


@needs_posix
def test_swapped_symlink_race_never_escapes_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:SECRET")
    inner = root / "etc"
    inner.mkdir()
    (inner / "passwd").write_text("inside the root")
    parked, link = root / "etc-parked", root / "etc-link"
    link.symlink_to(outside, target_is_directory=True)
    stop = threading.Event()
    swaps = 0

    def swap() -> None:  # etc/ is a real directory, then a symlink out of the root, then back
        nonlocal swaps
        while not stop.is_set():
            os.rename(inner, parked)
            os.rename(link, inner)
            os.rename(inner, link)
            os.rename(parked, inner)
            swaps += 1

    service = ContextService(roots=IngestRoots.from_settings((str(root),)))
    asked = str(inner / "passwd")
    outcomes: Counter[str] = Counter()
    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    end = time.monotonic() + SWAP_SECONDS
    try:
        for _ in range(SWAP_CALLS):
            refused = outcomes["IngestPath"] + outcomes["IngestOutsideRoots"]
            if time.monotonic() > end or min(outcomes["read"], refused) >= ENOUGH_OF_EACH:
                break
            try:
                content = service.compile_context(request([{"path": asked}]))["content"]
            except (IngestPath, IngestOutsideRoots) as exc:
                outcomes[type(exc).__name__] += 1
                assert str(outside) not in exc.message
                continue
            assert "SECRET" not in content
            assert content == "inside the root"
            outcomes["read"] += 1
    finally:
        stop.set()
        swapper.join()
    assert swaps > 0 and outcomes["read"] > 0, (swaps, outcomes)
    assert outcomes["IngestPath"] + outcomes["IngestOutsideRoots"] > 0, outcomes


@needs_posix
def test_a_link_on_the_checked_path_is_never_followed_when_opening(tmp_path: Path, monkeypatch) -> None:
    """The race frozen at its worst instant: the path passed the root check as a real directory,
    and is a symlink out of the root by the time it is opened."""
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("SECRET")
    (root / "etc").symlink_to(outside, target_is_directory=True)
    service = ContextService(roots=IngestRoots.from_settings((str(root),)))
    monkeypatch.setattr(os.path, "realpath", lambda p, *a, **k: str(p))  # the check saw no link
    with pytest.raises(IngestPath, match="changed while it was being opened") as info:
        service.compile_context(request([{"path": str(root / "etc" / "passwd")}]))
    assert str(outside) not in info.value.message

"""The Status page's tail of the log: warnings and errors only, bounded, newest first, kept
while the Runtime runs."""

from __future__ import annotations

import logging
from pathlib import Path

from velesmem.config import Settings
from velesmem.embed import HashEmbedder
from velesmem.logtail import RecentErrors
from velesmem.runtime import Runtime


def test_only_warnings_and_errors_are_kept_newest_first_and_bounded() -> None:
    tail = RecentErrors(size=3, chars=20)
    log = logging.getLogger("velesmem.test-logtail")
    tail.attach()
    try:
        log.info("not kept")
        for n in range(5):
            log.error("error number %d with a long tail of words", n)
        log.warning("last")
    finally:
        tail.detach()
    log.error("after detach: not kept")
    lines = tail.lines()
    assert [line.message for line in lines] == [
        "last", "error number 4 with ", "error number 3 with "]
    assert [line.level for line in lines] == ["WARNING", "ERROR", "ERROR"]
    assert lines[0].logger == "velesmem.test-logtail"


def test_an_exception_is_named_without_its_traceback() -> None:
    tail = RecentErrors()
    tail.attach()
    try:
        try:
            raise ValueError("bad value")
        except ValueError:
            logging.getLogger("velesmem").exception("the worker failed")
    finally:
        tail.detach()
    assert tail.lines()[0].message == "the worker failed (ValueError: bad value)"


def test_the_runtime_keeps_its_errors_from_start_to_close(tmp_path: Path) -> None:
    with Runtime.open(Settings(path=tmp_path), embedder=HashEmbedder()) as rt:
        logging.getLogger("velesmem.test-logtail").error("seen by the runtime")
        assert "seen by the runtime" in [line.message for line in rt.recent_errors.lines()]
    logging.getLogger("velesmem.test-logtail").error("after close")
    assert "after close" not in [line.message for line in rt.recent_errors.lines()]

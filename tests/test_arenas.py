"""The process-wide malloc arena cap (``velesmem.arenas``)."""

from __future__ import annotations

import platform
import sys

import pytest

from velesmem import arenas

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="the cap exists with glibc only")
def test_malloc_arenas_are_capped_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(arenas.ENV, raising=False)
    assert arenas.cap_arenas() is True


def test_a_malloc_arena_limit_the_user_exported_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(arenas.ENV, "8")
    assert arenas.cap_arenas() is False


def test_the_cli_caps_arenas_before_it_parses_or_starts_anything(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import velesmem.cli as cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "cap_arenas", lambda: calls.append("cap") or True)
    with pytest.raises(SystemExit):
        cli.main(["--version"], attach=False)
    assert calls == ["cap"]

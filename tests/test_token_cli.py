"""``velesdb-memory token create|list|revoke``: the token is printed once and never stored or
listed; names are validated before the store is touched; revoking a missing name fails."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from velesmem.cli import main
from velesmem.store.sqlite.backend import DB_FILE


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in [k for k in os.environ if k.startswith("VELESDB_MEMORY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no installer record
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(tmp_path / "store"))
    return tmp_path / "store"


def test_create_prints_the_token_once_and_stores_only_its_hash(
    store: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["token", "create", "--name", "alice"]) == 0
    out = capsys.readouterr()
    token = out.out.strip()
    assert token.startswith("vmt_") and len(token) == 4 + 43 and "\n" not in token
    assert "shown only this once" in out.err and "velesdb-memory wire --token" in out.err
    raw = b"".join(p.read_bytes() for p in store.iterdir() if p.name.startswith(DB_FILE))
    assert token.encode() not in raw
    assert hashlib.sha256(token.encode()).hexdigest().encode() in raw
    assert main(["token", "create", "--name", "bob"]) == 0
    assert capsys.readouterr().out.strip() != token  # random, never reused


def test_list_shows_names_and_dates_never_tokens(
    store: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["token", "list"]) == 0
    assert "no tokens" in capsys.readouterr().err
    main(["token", "create", "--name", "alice"])
    main(["token", "create", "--name", "ci-runner"])
    tokens = [line for line in capsys.readouterr().out.split()]
    assert main(["token", "revoke", "--name", "alice"]) == 0
    assert "refuses it from its next request" in capsys.readouterr().err
    assert main(["token", "list"]) == 0
    listed = capsys.readouterr().out
    lines = listed.splitlines()
    assert lines[0].split() == ["NAME", "CREATED", "STATUS"]
    assert lines[1].startswith("alice ") and " revoked " in lines[1] and "UTC" in lines[1]
    assert lines[2].startswith("ci-runner ") and lines[2].endswith("live")
    for token in tokens:
        assert token not in listed
        assert hashlib.sha256(token.encode()).hexdigest() not in listed


def test_refusals_are_worded_and_change_nothing(
    store: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["token", "create", "--name", "bad name!"]) == 1
    assert "must be 1-64 ASCII letters" in capsys.readouterr().err
    assert not store.exists()  # refused before the store was touched
    assert main(["token", "create", "--name", "x" * 65]) == 1
    assert main(["token", "create", "--name", "alice"]) == 0
    capsys.readouterr()
    assert main(["token", "create", "--name", "alice"]) == 1
    assert "already exists: revoke it first" in capsys.readouterr().err
    assert main(["token", "revoke", "--name", "nobody"]) == 1
    assert "no live token named 'nobody'" in capsys.readouterr().err
    main(["token", "list"])
    assert len(capsys.readouterr().out.splitlines()) == 2  # the header and alice


def test_store_flag_picks_another_store(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    other = tmp_path / "other"
    assert main(["token", "create", "--name", "laptop", "--store", str(other)]) == 0
    assert (other / DB_FILE).is_file() and not store.exists()
    capsys.readouterr()
    main(["token", "list", "--store", str(other)])
    assert "laptop" in capsys.readouterr().out

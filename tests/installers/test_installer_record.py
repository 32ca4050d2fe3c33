"""The installer record: one source of truth for where the daemon is. Flags win over the
environment, which wins over the record, which wins over the defaults."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from velesmem import installed
from velesmem.clients.host import Host
from velesmem.config import Settings
from velesmem.service import layout
from velesmem.service.options import add_daemon_options, port_and_tls, spec_from_args

RECORDED = {"VELESDB_MEMORY_HTTP_BIND": "127.0.0.1:18611", "VELESDB_MEMORY_PATH": "/srv/store",
            "VELESDB_MEMORY_TLS_DIR": "/srv/tls", "VELESDB_MEMORY_EMBEDDER": "ollama",
            "VELESDB_MEMORY_HTTP": "1", "VELESDB_MEMORY_EXTRACTOR_MODEL": "m"}


def write_record(home: Path, settings: dict[str, str] = RECORDED) -> Path:
    path = Path(str(installed.record_path({"HOME": str(home)}, windows=False)))
    installed.write(installed.Record(settings=dict(settings), python="/venv/bin/python", manager="systemd"), path)
    return path


def test_the_record_path_per_os_sits_in_the_services_state_dir() -> None:
    for host, expected in (
        (Host("Linux", "/home/you", {}), "/home/you/.local/state/velesdb-memory/installed.json"),
        (Host("Darwin", "/Users/you", {}), "/Users/you/.local/state/velesdb-memory/installed.json"),
        (Host("Linux", "/home/you", {"XDG_STATE_HOME": "/state"}), "/state/velesdb-memory/installed.json"),
        (Host("Windows", "C:\\Users\\you", {"LOCALAPPDATA": "D:\\Local"}), "D:\\Local\\velesdb-memory\\installed.json"),
        (Host("Windows", "C:\\Users\\you", {}), "C:\\Users\\you\\AppData\\Local\\velesdb-memory\\installed.json"),
    ):
        assert str(layout.record_file(host)) == expected
        assert layout.record_file(host).parent == layout.state_dir(host)


def test_settings_take_what_the_environment_leaves_unset_from_the_record() -> None:
    record = installed.Record(settings=RECORDED).inherited()
    s = Settings.from_env({}, record=record)
    assert (s.http_port, s.path, s.tls_dir, s.embedder) == (18611, Path("/srv/store"), Path("/srv/tls"), "ollama")
    assert s.http is False  # how the service runs is not inherited: a stdio client stays stdio
    s = Settings.from_env({"VELESDB_MEMORY_HTTP_BIND": "127.0.0.1:19000", "VELESDB_MEMORY_EMBEDDER": "hash"},
                          record=record)
    assert (s.http_port, s.embedder, s.path) == (19000, "hash", Path("/srv/store"))  # the environment wins
    assert Settings.from_env({}).http_port == 18090  # an explicit environment alone: no record


def test_the_process_environment_reads_the_record_of_its_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Settings.from_env().http_port == 18090  # no record yet: the defaults
    write_record(tmp_path)
    assert Settings.from_env().http_port == 18611 and Settings.from_env().path == Path("/srv/store")
    monkeypatch.setenv("VELESDB_MEMORY_HTTP_BIND", "127.0.0.1:19001")
    assert Settings.from_env().http_port == 19001


def test_flags_win_over_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_record(tmp_path)
    parser = argparse.ArgumentParser()
    add_daemon_options(parser)
    assert port_and_tls(parser.parse_args([])) == (18611, "/srv/tls")
    assert port_and_tls(parser.parse_args(["--port", "18700", "--tls-dir", str(tmp_path)])) == (18700, str(tmp_path))
    spec = spec_from_args(parser.parse_args(["--embedder", "hash"]))
    assert (spec.port, spec.store, spec.tls_dir, spec.embedder) == (18611, "/srv/store", "/srv/tls", "hash")


def test_a_bad_value_in_the_record_names_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("VELESDB_MEMORY_EMBEDDER", raising=False)  # the record's value is read
    write_record(tmp_path, {"VELESDB_MEMORY_EMBEDDER": "nope"})
    from velesmem.errors import Internal

    with pytest.raises(Internal, match=r"VELESDB_MEMORY_EMBEDDER \(from the installer record\)='nope'"):
        Settings.from_env()


@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": 2, "settings": {}}',
                                     '{"format": 1, "settings": {"VELESDB_MEMORY_PATH": 3}}'])
def test_an_unreadable_record_is_reported_and_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], content: str) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    path = write_record(tmp_path)
    path.write_text(content)
    installed._warned.clear()
    assert Settings.from_env().http_port == 18090
    assert f"ignoring the installer record {path}" in capsys.readouterr().err


def test_write_is_idempotent_and_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "installed.json"
    record = installed.Record(settings={"VELESDB_MEMORY_PATH": "/x"}, python="p", manager="background",
                              velesmem_version="0.1.0")
    assert installed.write(record, path) is True
    assert installed.write(record, path) is False
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["settings"] == {"VELESDB_MEMORY_PATH": "/x"}
    assert installed.read(path) == record
    assert installed.remove(path) is True and installed.remove(path) is False


def test_the_health_header_doctor_reads_is_the_one_the_daemon_sends() -> None:
    from velesmem.daemon.address import STORE_HEADER
    from velesmem.service.health import STORE_HEADER as READ

    assert READ == STORE_HEADER

"""``velesdb-memory import``: export → import restores facts, learned confidence, TTLs, edges and
scaffolding (SQLite → SQLite and SQLite → PostgreSQL); a second run changes nothing; a bad line
anywhere in the file, an edge to a missing fact or an overlong line imports nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import velesmem
from velesmem.cli import main
from velesmem.config import Settings
from velesmem.memory import MemoryService
from velesmem.memory.export import export_store
from velesmem.runtime import offline_store


def _fill(mem: MemoryService) -> None:
    a = mem.remember("decision: move the store to the team database", metadata={"team": "core"})
    b = mem.remember("evidence: two daemons share one PostgreSQL", metadata={"n": 2.5})
    c = mem.remember("a reminder that expires in an hour", ttl_seconds=3600)
    mem.relate(a.id, b.id, "supported_by")
    mem.relate(c.id, a.id, "about")
    for _ in range(3):
        mem.feedback(a.id, True)
    mem.feedback(b.id, False)
    mem.put_internal(77, "Entity: postgres", {"_veles_name": "postgres"}, kind="entity_hub")
    mem.relate(a.id, 77, "mentions")


def _export(settings: Settings, out: Path) -> list[dict]:
    now = time.time()
    with offline_store(settings, now=now) as store:
        export_store(store, out, include_internal=True, now=now)
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def _import(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            settings: Settings, file: Path) -> tuple[int, str]:
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(settings.path))
    monkeypatch.setenv("VELESDB_MEMORY_BACKEND", settings.backend)
    if settings.database_url:
        monkeypatch.setenv("VELESDB_MEMORY_DATABASE_URL", settings.database_url)
    code = main(["import", str(file)])
    return code, capsys.readouterr().err


def _comparable(lines: list[dict]) -> list[dict]:
    out = []
    for line in lines:
        line = dict(line)
        line.pop("updated_at", None)  # import restores it too, but export order is all we need
        out.append(line)
    return out


@pytest.mark.parametrize("target", ["sqlite", "postgres"])
def test_export_then_import_restores_everything_and_a_rerun_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        target: str, request: pytest.FixtureRequest) -> None:
    source = Settings(path=tmp_path / "personal", autograph="off")  # a known graph
    with velesmem.open(source.path, settings=source).memory as mem:
        _fill(mem)
    exported = _export(source, tmp_path / "memories.jsonl")
    assert sum(line["type"] == "fact" for line in exported) == 4
    if target == "sqlite":
        dest = Settings(path=tmp_path / "restored")
    else:
        dest = request.getfixturevalue("postgres_settings")
    code, err = _import(monkeypatch, capsys, dest, tmp_path / "memories.jsonl")
    assert code == 0, err
    assert "imported 4 facts and 3 edges" in err
    again = _export(dest, tmp_path / "again.jsonl")
    assert _comparable(again) == _comparable(exported)
    with velesmem.open(dest.path, settings=dest).memory as mem:
        hit = mem.recall("team database decision", k=1).memories[0]
        assert hit.content == "decision: move the store to the team database"
        assert mem.confidences([hit.id]) == {hit.id: 0.8}
    code, err = _import(monkeypatch, capsys, dest, tmp_path / "memories.jsonl")
    assert code == 0 and "imported 0 facts and 0 edges" in err and "7 already there" in err
    assert _export(dest, tmp_path / "third.jsonl") == again  # not even updated_at moved


def test_a_bad_line_imports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "broken.jsonl"
    file.write_text(_line("x") + "\n" + '{"type": "edge", "from": 1}\n', encoding="utf-8")
    dest = Settings(path=tmp_path / "store")
    code, err = _import(monkeypatch, capsys, dest, file)
    assert code == 1 and "broken.jsonl:2" in err and "nothing was imported" in err
    assert not (tmp_path / "store").exists()


def _line(text: str, **extra: object) -> str:
    from velesmem.ids import fact_id

    fid = fact_id(text)
    line = {"type": "fact", "id": fid, "id_str": str(fid), "content": text,
            "metadata": {"_veles_date": 20260101}, "confidence": 0.5, "successes": 0,
            "failures": 0, "created_at": 1.0, "updated_at": 1.0, "expires_at": None}
    line.update(extra)
    return json.dumps(line)


def test_a_file_whose_later_line_is_bad_leaves_the_store_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    dest = Settings.from_env().with_overrides(path=tmp_path / "store")
    with velesmem.open(dest.path, settings=dest).memory as mem:
        mem.remember("stored before the import")
    before = _export(dest, tmp_path / "before.jsonl")
    file = tmp_path / "m.jsonl"
    file.write_text("\n".join([_line("kept"), _line("also kept"),
                               _line("reserved key", metadata={"_veles_secret": 1})]) + "\n",
                    encoding="utf-8")
    code, err = _import(monkeypatch, capsys, dest, file)
    assert code == 1 and "m.jsonl:3: metadata key '_veles_secret' is reserved" in err
    assert "nothing was imported" in err
    file.write_text("\n".join([_line("kept"), json.dumps(
        {"type": "edge", "from": json.loads(_line("kept"))["id"], "to": 42,
         "relation": "next"})]) + "\n", encoding="utf-8")
    code, err = _import(monkeypatch, capsys, dest, file)
    assert code == 1 and "line 2: the edge's to 42 is neither" in err
    assert "nothing was imported" in err
    assert _export(dest, tmp_path / "after.jsonl") == before


def test_max_line_bytes_refuses_a_longer_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "m.jsonl"
    file.write_text(_line("short") + "\n" + _line("long " * 400) + "\n", encoding="utf-8")
    dest = Settings(path=tmp_path / "store")
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(dest.path))
    code = main(["import", "--max-line-bytes", "1000", str(file)])
    err = capsys.readouterr().err
    assert code == 1 and "m.jsonl:2: the line is longer than 1,000 bytes" in err
    assert not dest.path.exists()
    code = main(["import", str(file)])
    assert code == 0 and "imported 2 facts" in capsys.readouterr().err


def test_expired_facts_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "m.jsonl"
    file.write_text("\n".join([_line("long gone", expires_at=1000.0), _line("kept"),
                               _line("kept")]) + "\n", encoding="utf-8")
    dest = Settings(path=tmp_path / "store")
    code, err = _import(monkeypatch, capsys, dest, file)
    assert code == 0, err
    assert "imported 1 facts" in err and "1 expired skipped" in err
    assert "1 repeated lines counted once" in err

"""Export → import, all or nothing, on each backend: a team store's backup (facts carrying the
``_veles_author`` a bearer token recorded) restores every fact, its metadata, links, confidence
and TTL, also into a store with another embedder (re-embedded); a bad line anywhere, an edge to
a missing fact, an overlong line or deep nesting imports nothing; a repeated line counts once."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import velesmem
from velesmem.embed.hashing import HashEmbedder
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import fact_id, to_i64
from velesmem.memory import MemoryService
from velesmem.memory.export import export_store
from velesmem.memory.import_file import check_file, check_stream
from velesmem.memory.restore import restore
from velesmem.store.protocol import RestoredFact, RestoreWrite


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _export(mem: MemoryService, out: Path, *, include_internal: bool = False) -> list[dict]:
    export_store(mem.store, out, include_internal=include_internal, now=mem.now())
    return _lines(out)


def _import(mem: MemoryService, path: Path) -> object:
    return restore(mem.store, mem.embedder, check_file(path), mem.now())


def _fact_line(text: str, **extra: object) -> str:
    fid = fact_id(text)
    line = {"type": "fact", "id": fid, "id_str": str(fid), "content": text,
            "metadata": {"_veles_date": 20260101}, "confidence": 0.5, "successes": 0,
            "failures": 0, "created_at": 1.0, "updated_at": 1.0, "expires_at": None}
    line.update(extra)
    return json.dumps(line)


def _edge_line(src: str, dst: str, relation: str) -> str:
    return json.dumps({"type": "edge", "from_str": str(fact_id(src)),
                       "to_str": str(fact_id(dst)), "relation": relation})


@pytest.fixture
def dest(tmp_path: Path, clock) -> Iterator[MemoryService]:
    """A second, empty store beside ``mem`` (on the same backend)."""
    service = velesmem.open(tmp_path / "dest", clock=clock).memory
    try:
        yield service
    finally:
        service.close()


def _team_store(mem: MemoryService) -> None:
    """Facts as a team daemon writes them: two tokens' authors, a fact without one, links,
    feedback, a TTL."""
    a = mem.submit_remember("decision: the team store moves to PostgreSQL 18",
                            metadata={"project": "core"}, author="alice").result()
    b = mem.submit_remember("evidence: two daemons share one database without conflicts",
                            author="bob", ttl_seconds=7200).result()
    c = mem.remember("a personal note written before tokens existed")
    mem.relate(a.id, b.id, "supported_by")
    mem.relate(c.id, a.id, "about")
    for _ in range(2):
        mem.feedback(a.id, True)
    mem.feedback(b.id, False)


def test_team_backup_restores_every_fact_with_its_author(mem: MemoryService,
                                                         dest: MemoryService,
                                                         tmp_path: Path) -> None:
    _team_store(mem)
    exported = _export(mem, tmp_path / "backup.jsonl")
    authors = sorted(line["metadata"].get("_veles_author", "-") for line in exported
                     if line["type"] == "fact")
    assert authors == ["-", "alice", "bob"]
    report = _import(dest, tmp_path / "backup.jsonl")
    assert (report.facts, report.edges) == (3, 2)
    assert _export(dest, tmp_path / "again.jsonl") == exported  # confidence, TTL, times too
    hit = dest.recall("which database does the team store use", k=1).memories[0]
    assert hit.metadata["_veles_author"] == "alice"
    # still read-only to clients: remember refuses the key, as before
    with pytest.raises(InvalidInput, match="reserved"):
        dest.remember("forged", metadata={"_veles_author": "mallory"})


def test_a_second_import_of_the_same_backup_changes_nothing(mem: MemoryService,
                                                            dest: MemoryService,
                                                            tmp_path: Path) -> None:
    _team_store(mem)
    _export(mem, tmp_path / "backup.jsonl")
    _import(dest, tmp_path / "backup.jsonl")
    first = _export(dest, tmp_path / "first.jsonl", include_internal=True)
    report = _import(dest, tmp_path / "backup.jsonl")
    assert (report.facts, report.edges, report.unchanged) == (0, 0, 5)
    assert _export(dest, tmp_path / "second.jsonl", include_internal=True) == first


def test_import_into_another_embedder_re_embeds_every_fact(mem: MemoryService, tmp_path: Path,
                                                           clock) -> None:
    _team_store(mem)
    exported = _export(mem, tmp_path / "backup.jsonl")
    other = HashEmbedder(dimension=64)
    with velesmem.open(tmp_path / "other", clock=clock, embedder=other).memory as target:
        report = _import(target, tmp_path / "backup.jsonl")
        assert report.facts == 3
        assert target.store.provenance().model == other.model
        for line in exported:
            if line["type"] == "fact":
                query = other.embed([line["content"]])[0]
                best = target.store.vector_search(query, 1, None)
                assert best[0][0] == to_i64(line["id"])
        assert _export(target, tmp_path / "again.jsonl") == exported


def test_scaffolding_round_trips_with_include_internal(mem: MemoryService, dest: MemoryService,
                                                       tmp_path: Path) -> None:
    a = mem.remember("decision: keep entity hubs in exports")
    mem.put_internal(77, "Entity: hubs", {"_veles_entity": "hubs"}, kind="entity_hub")
    mem.relate(a.id, 77, "mentions")
    exported = _export(mem, tmp_path / "all.jsonl", include_internal=True)
    report = _import(dest, tmp_path / "all.jsonl")
    assert (report.facts, report.edges) == (2, 1)
    assert _export(dest, tmp_path / "again.jsonl", include_internal=True) == exported


def test_a_file_whose_later_line_is_bad_imports_nothing(dest: MemoryService,
                                                        tmp_path: Path) -> None:
    before = _export(dest, tmp_path / "before.jsonl", include_internal=True)
    bad_lines = [
        _fact_line("edited text", id=12345, id_str="12345"),
        _fact_line("x" * 3000),
        _fact_line("reserved key", metadata={"_veles_secret": 1}),
        _fact_line("forged author", metadata={"_veles_author": 7}),
        _edge_line("first good fact", "first good fact", "loops"),
        '{"type": "fact", "id": 1',
    ]
    for n, bad in enumerate(bad_lines):
        file = tmp_path / f"bad{n}.jsonl"
        file.write_text("\n".join([_fact_line("first good fact"), _fact_line("second good fact"),
                                   bad]) + "\n", encoding="utf-8")
        with pytest.raises(InvalidInput, match=rf"bad{n}\.jsonl:3: .*nothing was imported"):
            _import(dest, file)
    assert _export(dest, tmp_path / "after.jsonl", include_internal=True) == before


def test_an_edge_to_a_fact_neither_in_the_file_nor_stored_imports_nothing(
        dest: MemoryService, tmp_path: Path) -> None:
    kept = dest.remember("already stored before the import")
    file = tmp_path / "m.jsonl"
    file.write_text("\n".join([
        _fact_line("one"), _fact_line("two"), _edge_line("one", "two", "next"),
        _edge_line("already stored before the import", "one", "precedes"),  # fine: stored
        _edge_line("two", "never written anywhere", "next"),
    ]) + "\n", encoding="utf-8")
    before = _export(dest, tmp_path / "before.jsonl", include_internal=True)
    with pytest.raises(NotFound, match=r"line 5: .*neither a fact in the file nor a stored"):
        _import(dest, file)
    assert _export(dest, tmp_path / "after.jsonl", include_internal=True) == before
    assert [line["id"] for line in before] == [kept.id]


def test_the_store_writes_an_import_in_one_transaction(dest: MemoryService) -> None:
    """The store-level guarantee under the file check: a refusal at the last edge undoes the
    facts written before it in the same call."""
    now = dest.now()
    facts = tuple(
        RestoredFact(to_i64(fact_id(text)), text, '{"_veles_author":"alice"}', None,
                     dest.embedder.embed([text])[0], 0.9, 3, 0, 1.0, 2.0, None)
        for text in ("restored one", "restored two"))
    missing = to_i64(fact_id("not stored"))
    write = RestoreWrite(now, facts, ((facts[0].key, facts[1].key, "next"),
                                      (facts[1].key, missing, "next")))
    with pytest.raises(NotFound):
        dest.store.restore_all(write).result()
    assert dest.store.facts([f.key for f in facts], now, user_only=False) == {}
    assert dest.memory_status().memory == {"facts": 0, "edges": 0}
    whole = RestoreWrite(now, facts, write.edges[:1])
    assert dest.store.restore_all(whole).result() == 3
    stored = dest.store.facts([f.key for f in facts], now)
    assert sorted((f.confidence, f.successes, f.metadata["_veles_author"])
                  for f in stored.values()) == [(0.9, 3, "alice")] * 2


def test_a_line_over_the_cap_is_refused_before_it_is_read_whole(dest: MemoryService,
                                                                tmp_path: Path) -> None:
    cap = 4096
    huge = _fact_line("y" * 100)[:-1] + ', "pad": "' + "z" * (1 << 20) + '"}'
    stream = io.BytesIO((_fact_line("fine") + "\n" + huge + "\n").encode())
    with pytest.raises(InvalidInput, match=r"m\.jsonl:2: the line is longer than 4,096 bytes"):
        check_stream(stream, "m.jsonl", max_line_bytes=cap)
    first = len(_fact_line("fine")) + 1
    assert stream.tell() == first + cap + 1  # read no further than the cap
    file = tmp_path / "m.jsonl"
    file.write_bytes(stream.getvalue())
    before = _export(dest, tmp_path / "before.jsonl")
    with pytest.raises(InvalidInput, match="longer than"):
        restore(dest.store, dest.embedder, check_file(file, max_line_bytes=cap), dest.now())
    assert _export(dest, tmp_path / "after.jsonl") == before


def test_deep_nesting_is_a_worded_error(tmp_path: Path) -> None:
    file = tmp_path / "deep.jsonl"
    deep = '{"type": "fact", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}"
    file.write_text(_fact_line("fine") + "\n" + deep + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"deep\.jsonl:2: JSON nested too deeply"):
        check_file(file)


def test_a_repeated_line_counts_once(dest: MemoryService, tmp_path: Path) -> None:
    file = tmp_path / "twice.jsonl"
    lines = [_fact_line("said twice"), _fact_line("said once"),
             _edge_line("said twice", "said once", "next")]
    file.write_text("\n".join(lines + lines) + "\n", encoding="utf-8")
    report = _import(dest, file)
    assert (report.facts, report.edges, report.repeated) == (2, 1, 3)
    assert dest.memory_status().memory == {"facts": 2, "edges": 1}


def test_one_id_given_two_different_facts_is_refused(dest: MemoryService,
                                                     tmp_path: Path) -> None:
    file = tmp_path / "clash.jsonl"
    file.write_text(_fact_line("same id") + "\n" + _fact_line("same id", confidence=0.9) + "\n",
                    encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"clash.jsonl:2: id .* another fact on line 1"):
        _import(dest, file)
    assert dest.memory_status().memory == {"facts": 0, "edges": 0}


def test_expired_facts_are_skipped_with_their_edges(dest: MemoryService,
                                                    tmp_path: Path) -> None:
    file = tmp_path / "m.jsonl"
    file.write_text("\n".join([
        _fact_line("long gone", expires_at=1000.0), _fact_line("kept"),
        _edge_line("kept", "long gone", "mentions")]) + "\n", encoding="utf-8")
    report = _import(dest, file)
    assert (report.facts, report.edges, report.expired) == (1, 0, 2)
    assert [m["content"] for m in dest.list_memories().to_dict()["memories"]] == ["kept"]

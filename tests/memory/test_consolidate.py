"""Consolidation: preview changes nothing; apply archives duplicate groups into their newest
member and old superseded versions into their successor, in one journaled transaction; archived
facts leave recall (and list_memories unless asked) but stay by id, in export and in why; undo
restores exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.clock import Clock
from velesmem.cli import main
from velesmem.consolidate import ConsolidationService
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import to_i64
from velesmem.memory import MemoryService
from velesmem.memory.export import export_store

DAY = 86_400.0


def _service(mem: MemoryService, clock: Clock) -> ConsolidationService:
    return ConsolidationService(mem.store, clock)


def _ids(result: object) -> list[int]:
    return [m.id for m in result.memories]  # type: ignore[attr-defined]


def _edges(mem: MemoryService) -> set[tuple[int, int, str]]:
    """The edges between facts (the autograph's hub edges, about/mentions, land in the
    background and are left out)."""
    return {(e.src, e.dst, e.relation) for e in mem.store.export(mem.now(), include_internal=False)
            if hasattr(e, "relation") and e.relation not in ("about", "mentions")}


def _dup_group(mem: MemoryService, clock: Clock) -> tuple[int, int, int]:
    a = mem.remember("The rate limiter allows 600 requests per minute per key").id
    clock.advance(10)
    b = mem.remember("Rate limiter: limited to 600 requests each minute for every key, per API key").id
    clock.advance(10)
    c = mem.remember("600 requests a minute per key is the rate limit").id
    mem.relate(b, a, "duplicate_of")
    mem.relate(c, a, "duplicate_of")
    return a, b, c


def test_preview_lists_the_duplicate_merge_and_changes_nothing(mem: MemoryService,
                                                              clock: Clock) -> None:
    a, b, c = _dup_group(mem, clock)
    before = _edges(mem)
    report = _service(mem, clock).preview()
    assert report.run is None and not report.applied
    assert {(ch.src, ch.dst, ch.reason) for ch in report.changes} == {
        (to_i64(a), to_i64(c), "duplicate"), (to_i64(b), to_i64(c), "duplicate")}
    assert _edges(mem) == before


def test_apply_archives_members_into_the_newest_and_recall_returns_one(mem: MemoryService,
                                                                      clock: Clock) -> None:
    a, b, c = _dup_group(mem, clock)
    assert len(_ids(mem.recall("rate limiter requests per minute", k=5))) == 3
    report = _service(mem, clock).apply()
    assert report.applied and report.run is not None
    assert _ids(mem.recall("rate limiter requests per minute", k=5)) == [c]
    edges = _edges(mem)
    assert (to_i64(a), to_i64(c), "consolidated_into") in edges
    assert (to_i64(b), to_i64(c), "consolidated_into") in edges
    # nothing deleted: by id, in list_memories, in why
    assert set(mem.store.facts([to_i64(a), to_i64(b), to_i64(c)], mem.now())) == {
        to_i64(a), to_i64(b), to_i64(c)}
    assert {m.id for m in mem.list_memories().memories} == {c}
    assert {m.id for m in mem.list_memories(include_archived=True).memories} == {a, b, c}
    why = mem.why("The rate limiter allows 600 requests per minute per key", max_hops=2)
    assert (why.nodes[0].id, why.nodes[0].hop) == (c, 0)  # archived facts never seed why...
    assert a in {n.id for n in why.nodes}  # ...but stay in its subgraph (c → a)
    assert (a, c, "consolidated_into") in {(e.from_, e.to, e.relation) for e in why.edges}
    # a second run finds nothing more to do
    assert _service(mem, clock).preview().changes == ()


def test_archived_facts_stay_in_export(mem: MemoryService, clock: Clock,
                                       tmp_path: Path) -> None:
    a, b, c = _dup_group(mem, clock)
    _service(mem, clock).apply()
    out = tmp_path / "export.jsonl"
    export_store(mem.store, out, include_internal=False, now=mem.now())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {int(x["id"]) for x in lines if x["type"] == "fact"} >= {a, b, c}


def test_undo_restores_exactly_and_is_idempotent(mem: MemoryService, clock: Clock) -> None:
    a, b, c = _dup_group(mem, clock)
    before = _edges(mem)
    service = _service(mem, clock)
    run = service.apply().run
    assert run is not None
    undone = service.undo(run)
    assert undone.undone and len(undone.changes) == 2
    assert _edges(mem) == before
    assert sorted(_ids(mem.recall("rate limiter requests per minute", k=5))) == sorted([a, b, c])
    assert mem.store.get_job(run).result["undone"] is True  # type: ignore[union-attr]
    assert service.undo(run).undone
    assert _edges(mem) == before


def test_undo_of_an_unknown_run_is_not_found(mem: MemoryService, clock: Clock) -> None:
    with pytest.raises(NotFound):
        _service(mem, clock).undo("consolidate-0000000000000000")


def test_superseded_versions_are_archived_only_past_the_age(mem: MemoryService,
                                                            clock: Clock) -> None:
    old = mem.remember("The API rate limit is 600 requests per minute").id
    clock.advance(5 * DAY)
    new = mem.remember("Since December the API rate limit is 900 requests per minute").id
    mem.relate(new, old, "supersedes")
    service = _service(mem, clock)
    assert service.preview(archive_after_days=30).changes == ()
    clock.advance(30 * DAY)
    report = service.apply(archive_after_days=30)
    assert [(ch.src, ch.dst, ch.reason) for ch in report.changes] == [
        (to_i64(old), to_i64(new), "superseded")]
    assert _ids(mem.recall("API rate limit requests per minute", k=5)) == [new]


def test_applying_a_stale_preview_changes_nothing(mem: MemoryService, clock: Clock) -> None:
    """A previewed run naming a fact forgotten since is refused whole: no edge, no journal."""
    a, b, c = _dup_group(mem, clock)
    service = _service(mem, clock)
    preview = service.preview()
    mem.forget(b)
    before = _edges(mem)
    with pytest.raises(NotFound, match="preview again"):
        service.apply(previewed=preview)
    assert _edges(mem) == before
    assert service.runs() == []
    applied = service.apply()
    assert [(ch.src, ch.dst) for ch in applied.changes] == [(to_i64(a), to_i64(c))]


def test_a_run_not_committed_cannot_be_undone(mem: MemoryService, clock: Clock) -> None:
    """The journal entry is created before the one write that applies the run; if the process
    dies in between, the run stays "accepted" with nothing applied, and undo refuses it."""
    from velesmem.store.types import Job

    mem.store.create_job(Job("consolidate-deadbeefdeadbeef", "consolidate", "accepted", "x",
                             mem.now(), mem.now(), payload={"changes": []}), max_pending=4).result()
    with pytest.raises(InvalidInput, match="did not apply"):
        _service(mem, clock).undo("consolidate-deadbeefdeadbeef")


@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in [k for k in os.environ if k.startswith("VELESDB_MEMORY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("VELESDB_MEMORY_PATH", str(tmp_path / "store"))
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")
    return tmp_path / "store"


def test_cli_previews_applies_and_undoes(cli_store: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import velesmem

    with velesmem.open() as runtime:
        m = runtime.memory
        a = m.remember("deploys happen on Tuesdays").id
        b = m.remember("we deploy every Tuesday, never on Fridays").id
        m.relate(a, b, "duplicate_of")
    assert main(["consolidate"]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert preview["run"] is None
    assert preview["changes"] == [{"id": str(a), "into": str(b), "reason": "duplicate",
                                   "fact": "deploys happen on Tuesdays",
                                   "kept": "we deploy every Tuesday, never on Fridays"}]
    assert main(["consolidate", "--apply"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["applied"] and applied["changes"] == preview["changes"]
    assert main(["consolidate", "--undo", applied["run"]]) == 0
    assert json.loads(capsys.readouterr().out)["undone"] is True
    assert main(["consolidate"]) == 0
    assert json.loads(capsys.readouterr().out)["changes"] == preview["changes"]


def test_recall_still_returns_k_results_when_archived_facts_rank_first(mem: MemoryService,
                                                                      clock: Clock) -> None:
    _a, _b, c = _dup_group(mem, clock)
    other = mem.remember("The billing service limits exports to 10 per hour").id
    _service(mem, clock).apply()
    got = _ids(mem.recall("rate limiter 600 requests per minute per key", k=2))
    assert got == [c, other]
    where = _ids(mem.recall_where("rate limiter 600 requests per minute per key", [], k=2))
    assert where == [c, other]


def test_list_memories_pages_past_archived_facts(mem: MemoryService, clock: Clock) -> None:
    """A page whose facts are all archived is empty but its cursor still walks on."""
    _a, _b, c = _dup_group(mem, clock)
    _service(mem, clock).apply()
    seen: list[int] = []
    cursor = None
    for _ in range(10):
        page = mem.list_memories(cursor=cursor, limit=1)
        seen += [m.id for m in page.memories]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [c]


def test_the_daemon_schedule_applies_runs(store_dir: Path) -> None:
    """With consolidate_every set, the Runtime archives a duplicate group without a command."""
    import time

    import velesmem

    with velesmem.open(store_dir, embedder="hash", consolidate_every=1) as rt:
        a = rt.memory.remember("backups run nightly at 02:00 UTC").id
        b = rt.memory.remember("the nightly backup starts at 02:00 UTC every day").id
        rt.memory.relate(a, b, "duplicate_of")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if [m.id for m in rt.memory.list_memories().memories] == [b]:
                break
            time.sleep(0.05)
        assert [m.id for m in rt.memory.list_memories().memories] == [b]
        assert rt.consolidation.preview().changes == ()


def test_history_lists_applied_and_undone_runs_newest_first(mem: MemoryService,
                                                            clock: Clock) -> None:
    _dup_group(mem, clock)
    service = _service(mem, clock)
    first = service.apply()
    service.undo(first.run or "")
    clock.advance(5)
    second = service.apply()
    runs = service.history()
    assert [(r.run, r.state, r.undone, r.changes) for r in runs] == [
        (second.run, "committed", False, 2), (first.run, "committed", True, 2)]
    assert runs[0].applied_at > runs[1].applied_at


def test_report_of_a_past_run_names_its_changes_with_texts(mem: MemoryService,
                                                         clock: Clock) -> None:
    _, _, c = _dup_group(mem, clock)
    service = _service(mem, clock)
    applied = service.apply()
    report = service.report(applied.run or "")
    assert (report.run, report.applied, report.undone) == (applied.run, True, False)
    assert report.changes == applied.changes
    assert report.texts[to_i64(c)].startswith("600 requests a minute")
    assert len(service.report(applied.run or "", shown=1).texts) == 2  # one change: its two ends
    with pytest.raises(NotFound):
        service.report("consolidate-0000")


def test_a_preview_fingerprint_changes_with_the_plan(mem: MemoryService, clock: Clock) -> None:
    service = _service(mem, clock)
    empty = service.preview().fingerprint
    _dup_group(mem, clock)
    shown = service.preview()
    assert shown.fingerprint != empty
    assert service.preview().fingerprint == shown.fingerprint  # same plan, same digest


def test_archived_facts_never_rank_first_in_recall_fused(mem: MemoryService,
                                                         clock: Clock) -> None:
    a, b, c = _dup_group(mem, clock)
    _service(mem, clock).apply()
    fused = mem.recall_fused("The rate limiter allows 600 requests per minute per key", k=3)
    assert _ids(fused)[0] == c and not {a, b} & set(_ids(fused))


def _confidence(mem: MemoryService, key: int) -> float:
    return mem.store.confidences([to_i64(key)], mem.now())[to_i64(key)]


def test_decay_lowers_once_the_confidence_of_facts_left_without_feedback(
        mem: MemoryService, clock: Clock) -> None:
    stale = mem.remember("The legacy importer runs on the old cron host").id
    used = mem.remember("The billing export runs at 03:00 UTC").id
    mem.feedback(used, True)
    clock.advance(200 * DAY)
    fresh = mem.remember("The new importer runs in the job queue").id
    service = _service(mem, clock)
    preview = service.preview(decay_after_days=180)
    assert [d.key for d in preview.decays] == [to_i64(stale)]
    assert _confidence(mem, stale) == 0.5  # a preview changes nothing
    report = service.apply(decay_after_days=180)
    assert report.to_dict()["decayed"][0]["id"] == str(stale)
    assert _confidence(mem, stale) == pytest.approx(0.4)
    assert _confidence(mem, fresh) == 0.5 and _confidence(mem, used) == pytest.approx(0.6)
    assert service.preview(decay_after_days=180).decays == ()  # once, not every run
    assert service.preview(decay_after_days=0).decays == ()  # 0: never
    assert report.run is not None
    service.undo(report.run)
    assert _confidence(mem, stale) == 0.5
    service.undo(report.run)  # a second undo gives nothing back twice
    assert _confidence(mem, stale) == 0.5


def test_decay_undo_keeps_feedback_given_since(mem: MemoryService, clock: Clock) -> None:
    stale = mem.remember("The legacy importer runs on the old cron host").id
    clock.advance(200 * DAY)
    service = _service(mem, clock)
    run = service.apply(decay_after_days=180).run
    assert run is not None
    mem.feedback(stale, True)  # 0.4 → 0.5
    service.undo(run)
    assert _confidence(mem, stale) == pytest.approx(0.6)


def _history(mem: MemoryService, key: int) -> list[tuple[float, float, str]]:
    return [(e.at, round(e.confidence, 6), e.cause)
            for e in mem.store.confidence_history(to_i64(key), 10)]


def test_decay_and_its_undo_are_recorded_in_the_confidence_history(
        mem: MemoryService, clock: Clock) -> None:
    stale = mem.remember("The legacy importer runs on the old cron host").id
    clock.advance(200 * DAY)
    service = _service(mem, clock)
    service.preview(decay_after_days=180)
    assert _history(mem, stale) == []  # a preview records nothing
    applied_at = clock()
    run = service.apply(decay_after_days=180).run
    assert run is not None
    clock.advance(60)
    mem.feedback(stale, True)  # 0.4 → 0.5
    clock.advance(60)
    service.undo(run)
    service.undo(run)  # a second undo changes nothing, so records nothing
    assert _history(mem, stale) == [(applied_at + 120, 0.6, "decay_undone"),
                                     (applied_at + 60, 0.5, "helpful"),
                                     (applied_at, 0.4, "decay")]


def test_decay_setting_defaults_to_180_days() -> None:
    from velesmem.config import Settings
    assert Settings.from_env({}, record={}).decay_after_days == 180.0
    assert Settings.from_env({"VELESDB_MEMORY_DECAY_AFTER_DAYS": "0"},
                             record={}).decay_after_days == 0.0

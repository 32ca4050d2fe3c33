"""Many daemons, one database: a second process plays the other daemon. Concurrent remembers
converge, feedback loses no update, a relate/forget race leaves no dangling edge, jobs and the
TTL sweep run once (a dead daemon's running job is taken over once), a fresh database is
migrated once, and SIGKILL loses nothing acknowledged."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from tests.support import wait_for
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import to_u64
from velesmem.store import Job
from velesmem.store.postgres.backend import PostgresStore

from .conftest import DIM, NOW, key, write

DEADLINE_S = 60.0
# A second daemon: opens the same database with the same embedder identity, then runs MODE.
CHILD = f"""
import json, sys, time
import numpy as np
from velesmem.config import Settings
from velesmem.ids import fact_id, to_i64
from velesmem.store import FactWrite, Identity, WarmProgress, open_store
from velesmem.runtime import ThreadSpawner

url, mode, arg = sys.argv[1], sys.argv[2], sys.argv[3]
NOW = {NOW!r}

def vec(seed):
    v = np.random.default_rng(seed).standard_normal({DIM}).astype(np.float32)
    return v / np.linalg.norm(v)

def write(text, now=NOW, expires_at=None):
    k = to_i64(fact_id(text))
    return FactWrite(k, text, "{{}}", vec(abs(k) % 10000), now, expires_at)

store = open_store(Settings(backend="postgres", database_url=url),
                   Identity("postgres-test-embedder", {DIM}), NOW)
store.start(ThreadSpawner())
store.warm(WarmProgress())
print("ready", flush=True)
sys.stdin.readline()  # go
if mode == "remember":
    futures = [store.remember(write(t)) for t in json.loads(arg)]
    print(json.dumps([f.result() for f in futures]), flush=True)
elif mode == "feedback":
    k, n = json.loads(arg)
    for _ in range(n):
        store.feedback(k, True, NOW).result()
    print("done", flush=True)
elif mode == "relate":
    done = 0
    for src, dst in json.loads(arg):
        try:
            store.relate(src, dst, "r", NOW).result()
            done += 1
        except Exception as exc:
            assert type(exc).__name__ == "NotFound", exc
    print(done, flush=True)
elif mode == "jobs":
    ran = []
    while True:
        job = store.claim_job("extract", NOW).result()
        if job is None:
            break
        print(job.id, flush=True)  # claimed (the parent waits for the first)
        time.sleep(0.002)  # the work
        store.update_job(job.id, NOW, state="committed", result={{"by": store.worker}}).result()
        ran.append(job.id)
    print(json.dumps(ran), flush=True)
elif mode == "hold":
    job = store.claim_job("extract", NOW).result()
    store.update_job(job.id, NOW, output="the model's extraction, persisted").result()
    print(job.id, flush=True)
    sys.stdin.readline()  # held until killed
elif mode == "purge":
    print(store.purge_expired(float(arg)).result(), flush=True)
elif mode == "stream":
    n = 0
    while True:
        text = f"streamed fact {{n}}"
        store.remember(write(text)).result()
        print(store.facts([to_i64(fact_id(text))], NOW) and text, flush=True)
        n += 1
store.close()
"""


class Child:
    """A second daemon process on the test's database, held at a barrier until ``go()``."""

    def __init__(self, spawn: Callable[..., subprocess.Popen], url: str, mode: str,
                 arg: object) -> None:
        self.proc = spawn(CHILD, url, mode, json.dumps(arg), stdin=subprocess.PIPE)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise AssertionError(f"child did not start: {line!r} {self.proc.stderr.read()}")

    def go(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def result(self) -> str:
        out, err = self.proc.communicate(timeout=DEADLINE_S)
        assert self.proc.returncode == 0, err
        return out


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    box: list[object] = []
    thread = threading.Thread(target=lambda: box.append(fn()))
    thread.start()
    return thread, box


@pytest.mark.integration
def test_concurrent_remembers_of_the_same_texts_converge(pg: PostgresStore, spawn,
                                                         postgres_url: str) -> None:
    shared = [f"shared decision {i}" for i in range(60)]
    mine = [f"parent only {i}" for i in range(20)]
    child = Child(spawn, postgres_url, "remember", shared + [f"child only {i}" for i in range(20)])
    child.go()
    acked = [f.result() for f in [pg.remember(write(t)) for t in shared + mine]]
    theirs = json.loads(child.result())
    assert acked[:60] == theirs[:60] == [key(t) for t in shared]
    assert pg.counts(NOW).facts == 100
    assert pg.verify() == []


@pytest.mark.integration
def test_feedback_from_two_daemons_loses_no_update(pg: PostgresStore, spawn,
                                                   postgres_url: str) -> None:
    pg.remember(write("reinforced twice over")).result()
    k = key("reinforced twice over")
    child = Child(spawn, postgres_url, "feedback", [k, 25])
    child.go()
    for _ in range(25):
        pg.feedback(k, True, NOW).result()
    assert child.result().strip() == "done"
    fact = pg.facts([k], NOW)[k]
    assert (fact.successes, fact.failures, fact.confidence) == (50, 0, 1.0)


@pytest.mark.integration
def test_a_relate_forget_race_leaves_no_dangling_edge(pg: PostgresStore, spawn,
                                                      postgres_url: str) -> None:
    pairs = []
    for i in range(40):
        pg.remember(write(f"source {i}")).result()
        pg.remember(write(f"target {i}")).result()
        pairs.append((key(f"source {i}"), key(f"target {i}")))
    child = Child(spawn, postgres_url, "relate", pairs)
    child.go()
    forgotten = [pg.forget(dst, NOW) for _, dst in pairs[::2]]
    assert all(f.result() for f in forgotten)
    related = int(child.result())
    with pg._conn() as conn:
        dangling = conn.execute("SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM "
                                "facts f WHERE f.id = e.dst)").fetchone()[0]
    assert dangling == 0
    # every edge to a kept target stands; one to a forgotten target was refused or went with it
    assert related >= 20 and pg.counts(NOW).edges == 20
    assert all(pg.targets(src) == [dst] for src, dst in pairs[1::2])
    assert pg.verify() == []


def _job(n: int, state: str = "accepted") -> Job:
    return Job(f"job-{n:02d}", "extract", state, f"fp{n}", NOW + n, NOW + n, payload={"n": n})


@pytest.mark.integration
def test_fifty_jobs_and_two_daemons_each_job_runs_exactly_once(pg: PostgresStore, spawn,
                                                               postgres_url: str) -> None:
    for n in range(50):
        assert pg.create_job(_job(n), max_pending=100).result()[1] is True
    assert pg.create_job(_job(0), max_pending=100).result()[1] is False  # idempotent per id
    child = Child(spawn, postgres_url, "jobs", None)
    child.go()
    mine: list[str] = []
    job = pg.claim_job("extract", NOW).result()
    # no further claim until the child has claimed one too: alone, this loop could empty the
    # queue before a loaded machine ran the child at all
    assert child.proc.stdout.readline().strip().startswith("job-")
    while job is not None:
        time.sleep(0.002)
        pg.update_job(job.id, NOW, state="committed", result={"by": pg.worker}).result()
        mine.append(job.id)
        job = pg.claim_job("extract", NOW).result()
    theirs = json.loads(child.result().splitlines()[-1])
    assert sorted(mine + theirs) == [f"job-{n:02d}" for n in range(50)]
    assert mine and theirs, "both daemons should have claimed work"
    with pg._conn() as conn:
        rows = conn.execute("SELECT state, attempts, count(*) FROM jobs GROUP BY 1, 2").fetchall()
    assert rows == [("committed", 1, 50)]
    assert pg.get_job("job-07").payload is None  # terminal: the request is dropped


@pytest.mark.integration
def test_a_dead_daemons_running_job_is_taken_over_once(pg: PostgresStore, spawn,
                                                       postgres_url: str) -> None:
    pg.create_job(_job(1), max_pending=10).result()
    child = Child(spawn, postgres_url, "hold", None)
    child.go()
    held = child.proc.stdout.readline().strip()
    assert held == "job-01"
    assert pg.claim_job("extract", NOW + 5).result() is None  # its daemon lives: not claimable
    assert pg.pending_jobs("extract", 10) == []  # nor resumable here
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(timeout=DEADLINE_S)
    taken = wait_for(lambda: pg.claim_job("extract", NOW + 6).result(), DEADLINE_S,
                     "the dead daemon's lease to lapse", poll_s=0.05)
    assert (taken.id, taken.state, taken.output) == ("job-01", "running",
                                                     "the model's extraction, persisted")
    assert pg.claim_job("extract", NOW + 7).result() is None  # taken once
    assert [j.id for j in pg.pending_jobs("extract", 10)] == ["job-01"]  # ours to resume
    done = pg.update_job("job-01", NOW + 8, state="committed", result={"ok": True}).result()
    assert (done.state, done.output, done.payload) == ("committed", None, None)


def test_the_pending_cap_and_job_updates(pg: PostgresStore) -> None:
    for n in range(3):
        pg.create_job(_job(n), max_pending=3).result()
    with pytest.raises(InvalidInput, match="the cap is 3"):
        pg.create_job(_job(9), max_pending=3).result()
    job = pg.update_job("job-00", NOW + 1, output="partial").result()
    assert (job.state, job.output, job.payload) == ("accepted", "partial", {"n": 0})
    failed = pg.update_job("job-00", NOW + 2, state="failed", error="model unreachable").result()
    assert (failed.state, failed.error, failed.output, failed.payload) == (
        "failed", "model unreachable", None, None)
    with pytest.raises(NotFound):
        pg.update_job("no-such-job", NOW, state="failed").result()
    assert [j.id for j in pg.pending_jobs("extract", 10)] == ["job-01", "job-02"]


@pytest.mark.integration
def test_the_ttl_sweep_runs_once_across_daemons(pg: PostgresStore, spawn,
                                                postgres_url: str) -> None:
    for i in range(200):
        pg.remember(write(f"expiring {i}", expires_at=NOW + 10)).result()
    pg.remember(write("staying")).result()
    child = Child(spawn, postgres_url, "purge", NOW + 11)
    child.go()
    ours = pg.purge_expired(NOW + 11).result()
    theirs = int(child.result())
    assert ours + theirs == 200
    assert pg.counts(NOW + 11).facts == 1 and pg.next_expiry() is None


@pytest.mark.integration
def test_two_daemons_migrate_a_fresh_database_once(spawn, pg_server) -> None:
    import psycopg

    name = f"fresh_{int(time.time() * 1000) % 10**9}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # no extension, no schema
    url = pg_server.url(name)
    try:
        children = [Child(spawn, url, "purge", NOW) for _ in range(2)]
        for c in children:
            c.go()
        assert [c.result().strip() for c in children] == ["0", "0"]
        with psycopg.connect(url) as conn:
            versions = [v for (v,) in conn.execute(
                "SELECT version FROM schema_migrations ORDER BY version")]
            spaces = conn.execute("SELECT count(*) FROM spaces").fetchone()[0]
        from velesmem.store.postgres.schema import MIGRATIONS

        assert versions == [m.version for m in MIGRATIONS] and spaces == 1
    finally:
        pg_server.drop(name)


@pytest.mark.integration
def test_sigkill_loses_no_acknowledged_write(pg: PostgresStore, spawn,
                                             postgres_url: str) -> None:
    child = Child(spawn, postgres_url, "stream", None)
    child.go()
    acked: list[str] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(acked) < 40 and time.monotonic() < deadline:
        line = child.proc.stdout.readline().strip()
        if line:
            acked.append(line)
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(timeout=DEADLINE_S)
    assert len(acked) >= 40
    found = pg.facts([key(t) for t in acked], NOW)
    assert sorted(to_u64(k) for k in found) == sorted(to_u64(key(t)) for t in acked)
    assert pg.verify() == []

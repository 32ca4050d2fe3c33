"""The PostgreSQL store's own promises: named migrations in one transaction each, settings that
never show the password, worded errors, filtered vector search's true top-k on both paths,
verify and repair of what is derived."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from velesmem.config import Settings
from velesmem.errors import EmbedderMismatch, Internal, InvalidInput
from velesmem.store import FactWrite, Identity, open_store
from velesmem.store.postgres import schema, spaces
from velesmem.store.postgres.backend import PostgresStore
from velesmem.store.postgres.connection import redact
from velesmem.store.predicates import All, Compare

from .conftest import DIM, IDENTITY, NOW, key, vector, write


def test_location_and_repr_never_show_the_password() -> None:
    url = "postgresql://team:s3cret-pw@db.example.com:5433/velesmem?sslmode=require"
    assert redact(url) == "postgresql://team@db.example.com:5433/velesmem?sslmode=require"
    assert redact("host=db user=team password=s3cret-pw dbname=v") == "host=db user=team dbname=v"
    assert "s3cret" not in redact("postgresql://db/v?password=s3cret-pw&sslmode=require")
    settings = Settings.from_env({"VELESDB_MEMORY_BACKEND": "postgres",
                                  "VELESDB_MEMORY_DATABASE_URL": url})
    assert settings.database_url == url and "s3cret" not in repr(settings)


def test_a_missing_url_and_an_unreachable_server_are_worded(tmp_path) -> None:
    with pytest.raises(Internal, match="needs VELESDB_MEMORY_DATABASE_URL"):
        open_store(Settings(backend="postgres"), IDENTITY, NOW)
    url = f"postgresql://velesmem:s3cret@/velesmem?host={tmp_path}"
    with pytest.raises(Internal, match="cannot reach PostgreSQL") as err:
        open_store(Settings(backend="postgres", database_url=url), IDENTITY, NOW)
    assert "s3cret" not in err.value.message


def test_migrations_are_named_recorded_and_atomic(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version"
                            ).fetchall()
        assert rows == [(m.version, m.name) for m in schema.MIGRATIONS]

        def broken(c: psycopg.Connection) -> None:
            c.execute("CREATE TABLE half_done (x integer)")
            raise RuntimeError("boom")

        extra = (*schema.MIGRATIONS, schema.Migration(99, "fails half way", broken))
        with pytest.raises(RuntimeError):
            schema.migrate(conn, NOW, extra)
        assert schema.current_version(conn) == schema.SCHEMA_VERSION
        assert conn.execute("SELECT to_regclass('half_done')").fetchone()[0] is None
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)")
    with pytest.raises(Internal, match="newer than this velesmem"):
        open_store(Settings(backend="postgres", database_url=postgres_url), IDENTITY, NOW)


def test_another_embedder_is_refused_once_vectors_exist(open_pg) -> None:
    store = open_pg()
    store.remember(write("filled by the test embedder")).result()
    store.close()
    with pytest.raises(EmbedderMismatch, match="postgres-test-embedder"):
        open_pg(identity=Identity("other-model", 16))
    maintenance = open_pg(start=False, identity=None)  # export / verify need no embedder
    assert maintenance.serving_space().identity == IDENTITY


def test_an_empty_space_takes_the_new_dimension(open_pg) -> None:
    open_pg().close()
    store = open_pg(identity=Identity("wider-model", 12))
    v = np.zeros(12, np.float32)
    v[0] = 1.0
    store.remember(FactWrite(key("twelve dims"), "twelve dims", "{}", v, NOW, None)).result()
    assert store.vector_search(v, 1, None)[0][0] == key("twelve dims")


def test_nul_characters_are_refused_before_anything_is_written(pg: PostgresStore) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        pg.remember(write("a\x00b"))
    with pytest.raises(InvalidInput, match="NUL"):
        pg.remember(write("clean text", metadata='{"k":"a\\u0000"}'))
    pg.remember(write("escaped backslash", metadata='{"k":"a\\\\u0000"}')).result()  # no NUL
    assert pg.counts(NOW).facts == 1


def test_writes_before_start_run_in_place(open_pg) -> None:
    store = open_pg(start=False)
    assert store.remember(write("before start")).result() == key("before start")
    assert store.facts([key("before start")], NOW)[key("before start")].content == "before start"


@pytest.mark.parametrize("path", ["exact", "hnsw over keys", "hnsw over the predicate"])
def test_filtered_vector_search_returns_the_true_top_k(pg: PostgresStore, path: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spaces, "EXACT_FILTER_MAX", 10_000 if path == "exact" else 0)
    texts = [f"vector fact {n}" for n in range(400)]
    for n, t in enumerate(texts):
        pg.remember(write(t, seed=n, metadata=f'{{"m":{n % 5}}}')).result()
    allowed = pg.matching(All((Compare("m", "number", "=", 0),)))
    if path != "hnsw over the predicate":
        allowed = np.array(allowed)  # a copy: bound as keys
    assert sorted(allowed.tolist()) == sorted(key(t) for n, t in enumerate(texts) if n % 5 == 0)
    q = vector(10_001)
    sims = {key(t): float(vector(n) @ q) for n, t in enumerate(texts) if n % 5 == 0}
    want = sorted(sims.values(), reverse=True)[:10]
    exact_calls: list[int] = []
    real_exact = spaces.exact
    monkeypatch.setattr(spaces, "exact", lambda *a: exact_calls.append(1) or real_exact(*a))
    got = pg.vector_search(q, 10, allowed)
    assert exact_calls == ([1] if path == "exact" else [])  # the index answered by itself
    assert {k for k, _ in got} <= set(allowed.tolist())
    assert [round(s, 5) for _, s in got] == [round(s, 5) for s in want]
    tiny = np.array(allowed[:3])
    assert {k for k, _ in pg.vector_search(q, 10, tiny)} == set(tiny.tolist())


def test_verify_finds_damage_to_derived_state_and_repair_rebuilds_it(pg: PostgresStore) -> None:
    for n in range(30):
        pg.remember(write(f"fact number {n} about caches", metadata=f'{{"n":{n}}}',
                          seed=n)).result()
    assert pg.verify() == []
    lost = key("fact number 3 about caches")
    table = spaces.table(pg.serving.id)
    with pg._conn() as conn:
        conn.execute("DELETE FROM fact_terms WHERE lexeme = 'cach'")
        conn.execute("DELETE FROM fact_meta WHERE key = 'n' AND num < 5")
        conn.execute("UPDATE text_stats SET docs = docs + 7")
        conn.execute(f"DELETE FROM {table} WHERE id = %s", (lost,))
        conn.execute(f"DROP INDEX {table}_hnsw")
    checks = sorted({p.check for p in pg.verify()})
    assert checks == ["hnsw", "metadata", "text", "vectors"]
    assert all(p.derived for p in pg.verify())
    left = pg.repair(lambda line: None, lambda texts: np.stack([vector(3) for _ in texts]))
    assert left == []
    assert pg.vector_search(vector(3), 1, None)[0][0] == lost
    assert pg.text_search("caches", None)[0].size == 30
    assert pg.matching(All((Compare("n", "number", "<", 5),))).size == 5


def test_dimension_is_the_columns(pg: PostgresStore) -> None:
    with pg._conn() as conn:
        typ = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                           "attrelid = %s::regclass AND attname = 'embedding'",
                           (spaces.table(pg.serving.id),)).fetchone()[0]
    assert typ == f"vector({DIM})"


def test_verify_and_export_commands_name_the_database_without_its_password(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path) -> None:
    from velesmem.cli import main

    url = postgres_url.replace("postgres:@", "postgres:hunter2@")  # trust auth ignores it
    monkeypatch.setenv("VELESDB_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("VELESDB_MEMORY_DATABASE_URL", url)
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "every check passed" in out and "hunter2" not in out and "postgres@" in out
    assert main(["export", "--output", str(tmp_path / "m.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "exported 0 facts" in err and "hunter2" not in err


def test_close_commits_the_writes_already_queued(open_pg) -> None:
    store = open_pg()
    futures = [store.remember(write(f"queued before close {n}")) for n in range(40)]
    store.close()
    assert [f.result() for f in futures] == [key(f"queued before close {n}") for n in range(40)]
    with pytest.raises(Internal, match="closed"):
        store.remember(write("after close"))
    again = open_pg()
    assert again.counts(NOW).facts == 40

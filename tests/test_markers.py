"""The ``integration`` marker is on every test that starts a process (checked statically, from
the source), so ``pytest -m "not integration"`` is the fast subset and starts none."""

from __future__ import annotations

from pathlib import Path

from tests.support.markers import learn, unmarked

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


# Not scanned: npm packages, and the scripts that made the import fixtures (run by hand, never
# imported by a test; their ``main`` would otherwise mark every test calling a CLI ``main``).
FIXTURE_SCRIPTS = TESTS / "fixtures"


def _modules() -> tuple[list[Path], list[Path]]:
    files = sorted(p for p in TESTS.rglob("*.py")
                   if "node_modules" not in p.parts and not p.is_relative_to(FIXTURE_SCRIPTS))
    tests = [p for p in files if p.name.startswith("test_")]
    return tests, [p for p in files if not p.name.startswith("test_")]


def test_every_test_that_starts_a_process_is_marked_integration() -> None:
    tests, helpers = _modules()
    spawner = learn(helpers)
    missing = [name for path in tests
               for name in unmarked(path.read_text("utf-8"), str(path.relative_to(REPO)), spawner)]
    assert missing == [], ("these tests start a process (subprocess, a daemon, a stdio client) "
                           "without @pytest.mark.integration:\n" + "\n".join(missing))


def test_the_marker_check_finds_a_subprocess_started_through_a_local_helper() -> None:
    source = '''
import subprocess

def _run_cli():
    return subprocess.run(["true"], check=True)

def test_cli_prints_nothing():
    _run_cli()

def test_pure():
    assert 1 + 1 == 2
'''
    assert unmarked(source, "t.py", learn([])) == ["t.py::test_cli_prints_nothing"]


def test_the_marker_check_follows_helpers_and_fixtures_of_other_modules() -> None:
    helper = TESTS / "support" / "_probe_helper_source.py"
    conftest = '''
import pytest
from daemon_helpers import Daemon

@pytest.fixture
def running(tmp_path):
    yield Daemon(tmp_path).start()
'''
    helper_source = '''
import subprocess

class Daemon:
    def start(self):
        self.proc = subprocess.Popen(["true"])
'''
    test_source = '''
import pytest

def test_uses_the_fixture(running):
    pass

@pytest.mark.integration
def test_marked(running):
    pass
'''
    import ast
    from tests.support import markers

    spawner = markers.Spawner()
    for source in (helper_source, conftest):  # the same fixed point learn() computes from files
        names, fixtures = markers._spawning(ast.parse(source), spawner)
        spawner.names |= names
        spawner.fixtures |= fixtures
    assert not helper.exists()
    assert unmarked(test_source, "t.py", spawner) == ["t.py::test_uses_the_fixture"]
    marked = "import pytest\npytestmark = pytest.mark.integration\n" + test_source
    assert unmarked(marked, "t.py", spawner) == []

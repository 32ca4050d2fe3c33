"""The public surface is pinned so it never changes by accident."""

from __future__ import annotations

import subprocess
import sys

import pytest

import velesmem


def test_public_names_are_pinned() -> None:
    assert velesmem.__all__ == ["Internal", "InvalidInput", "MemoryService", "NotFound",
                                "Runtime", "Settings", "VelesmemError", "__version__", "open"]
    for name in velesmem.__all__:
        assert getattr(velesmem, name) is not None


def test_memory_service_works_from_the_top_level_import(tmp_path) -> None:
    with velesmem.open(tmp_path, settings=velesmem.Settings(path=tmp_path)).memory as mem:
        stored = mem.remember("velesmem exports its engine at the top level")
        assert mem.recall("engine top level", k=1).memories[0].id == stored.id


def test_open_returns_the_runtime_whose_services_share_one_store(tmp_path) -> None:
    with velesmem.open(tmp_path, embedder="hash") as runtime:
        assert isinstance(runtime, velesmem.Runtime)
        assert runtime.settings.path == tmp_path and runtime.settings.embedder == "hash"
        assert runtime.memory.store is runtime.store is runtime.extraction.store
        stored = runtime.memory.remember("the runtime hands out its services")
        assert runtime.context.memory is runtime.memory
        assert runtime.memory.recall("runtime services", k=1).memories[0].id == stored.id
    assert runtime.state.value == "closed"


def test_closing_the_memory_service_closes_the_runtime_that_owns_it(tmp_path) -> None:
    runtime = velesmem.open(tmp_path, embedder="hash")
    runtime.memory.close()
    assert runtime.state.value == "closed"
    with velesmem.open(tmp_path, embedder="hash"):  # the lock was released
        pass


@pytest.mark.integration
def test_importing_the_package_does_not_load_faiss() -> None:
    code = "import sys, velesmem; print('faiss' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

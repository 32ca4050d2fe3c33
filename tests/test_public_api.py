"""The public surface is pinned so it never changes by accident."""

from __future__ import annotations

import subprocess
import sys

import pytest

import velesmem


def test_public_names_are_pinned() -> None:
    assert velesmem.__all__ == ["Internal", "InvalidInput", "MemoryService", "NotFound",
                                "Settings", "VelesmemError", "__version__"]
    for name in velesmem.__all__:
        assert getattr(velesmem, name) is not None


def test_memory_service_works_from_the_top_level_import(tmp_path) -> None:
    with velesmem.MemoryService.open(tmp_path, settings=velesmem.Settings(path=tmp_path)) as mem:
        stored = mem.remember("velesmem exports its engine at the top level")
        assert mem.recall("engine top level", k=1).memories[0].id == stored.id


@pytest.mark.integration
def test_importing_the_package_does_not_load_faiss() -> None:
    code = "import sys, velesmem; print('faiss' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

"""Modules the test extra provides: missing, a test skips on a developer's machine (saying what
to install) and fails in CI, where a skip would hide a broken setup."""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

import pytest

CI_ENV = "CI"


def in_ci() -> bool:
    """True under a CI runner (``CI=true``, set by .ci/run and by the usual CI services)."""
    return os.environ.get(CI_ENV, "").strip().lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """Skip the test with ``reason``, or fail it under CI (a missing dependency there is a bug)."""
    if in_ci():
        pytest.fail(f"{reason} (CI={os.environ.get(CI_ENV)}: a missing dependency fails here)",
                    pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str | None = None) -> ModuleType:
    """Import ``name``; when it cannot be imported, skip (or fail under CI) with ``reason``."""
    try:
        with warnings.catch_warnings():  # some packages warn at import (platformdirs, …)
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except ImportError as exc:
        missing(reason or f"{name} is not installed ({exc}); pip install -e '.[test]'")
        raise  # unreachable: missing() raises

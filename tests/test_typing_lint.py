"""Typing and lint as part of the test command: ``mypy`` (strict, configured in pyproject.toml)
over ``velesmem/`` and ``ruff`` over ``velesmem/``, ``tests/`` and ``bench/``, held to the
committed baseline ``tests/lint_baseline.txt``, which may only shrink.

The baseline counts errors per file and code (``path: code count``), not per line, so moving code
does not churn it. A new error fails the run with its location; an error fixed fails it too until
the baseline is regenerated, so the file never keeps room for errors that came back:

    python -m tests.test_typing_lint     # rewrites tests/lint_baseline.txt from a fresh run
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.modules import require_module

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "lint_baseline.txt"
REGENERATE = "python -m tests.test_typing_lint"
MYPY_PATHS = ("velesmem",)
RUFF_PATHS = ("velesmem", "tests", "bench")
TOOL_TIMEOUT_S = 240.0
HEADER = (
    "# mypy (strict) and ruff errors still allowed, per file and code; this file may only shrink.\n"
    f"# Regenerate after fixing errors: {REGENERATE}\n"
)


@dataclass(frozen=True)
class Finding:
    """One error a checker reported: where, which code, and what it said."""

    tool: str
    path: str
    line: int
    code: str
    message: str

    @property
    def key(self) -> str:
        return f"{self.path}: {self.code}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.tool} {self.code}] {self.message}"


def _relative(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        p = p.relative_to(ROOT)
    return p.as_posix()


def _run(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=TOOL_TIMEOUT_S, check=False)
    if proc.returncode not in (0, 1):  # 1: errors found; anything else: the tool itself failed
        raise RuntimeError(f"{args[0]} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}")
    return proc.stdout


def mypy_findings() -> list[Finding]:
    """mypy's errors over MYPY_PATHS with the pyproject.toml configuration (notes dropped)."""
    out = _run(["mypy", "--output", "json", "--no-error-summary", *MYPY_PATHS])
    found = []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        item = json.loads(line)
        if item.get("severity") != "error":
            continue
        found.append(Finding("mypy", _relative(item["file"]), int(item["line"]),
                             item.get("code") or "misc", item["message"]))
    return found


def ruff_findings() -> list[Finding]:
    """ruff's errors over RUFF_PATHS with the pyproject.toml configuration."""
    out = _run(["ruff", "check", "--output-format", "json", "--no-fix", *RUFF_PATHS])
    return [Finding("ruff", _relative(item["filename"]), int(item["location"]["row"]),
                    item.get("code") or "syntax", item["message"])
            for item in json.loads(out or "[]")]


def count(findings: list[Finding]) -> Counter[str]:
    return Counter(f.key for f in findings)


def render(counts: Counter[str]) -> str:
    return HEADER + "".join(f"{key} {n}\n" for key, n in sorted(counts.items()))


def parse(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, n = line.rpartition(" ")
        counts[key] += int(n)
    return counts


def new_errors(findings: list[Finding], baseline: Counter[str]) -> list[Finding]:
    """Every finding under a (file, code) whose count exceeds what the baseline allows: all of
    that pair's findings are listed, since a count cannot tell which one is new."""
    over = {key for key, n in count(findings).items() if n > baseline.get(key, 0)}
    return [f for f in findings if f.key in over]


def fixed_errors(findings: list[Finding], baseline: Counter[str]) -> dict[str, int]:
    """(file, code) pairs the baseline allows more of than remain: how many were fixed."""
    now = count(findings)
    return {key: n - now.get(key, 0) for key, n in baseline.items() if n > now.get(key, 0)}


@pytest.fixture(scope="module")
def findings() -> list[Finding]:
    require_module("mypy", "mypy is not installed; pip install -e '.[test]'")
    require_module("ruff", "ruff is not installed; pip install -e '.[test]'")
    return mypy_findings() + ruff_findings()


def _baseline() -> Counter[str]:
    return parse(BASELINE.read_text(encoding="utf-8"))


@pytest.mark.integration
def test_no_typing_or_lint_error_beyond_the_baseline(findings: list[Finding]) -> None:
    extra = new_errors(findings, _baseline())
    assert not extra, (
        "new mypy/ruff errors (fix them; the baseline may only shrink; `ruff check --fix` "
        "fixes some):\n" + "\n".join(map(str, extra)))


@pytest.mark.integration
def test_baseline_lists_only_errors_that_still_exist(findings: list[Finding]) -> None:
    fixed = fixed_errors(findings, _baseline())
    assert not fixed, (
        f"{sum(fixed.values())} baselined errors are fixed ({', '.join(sorted(fixed))}): "
        f"shrink the baseline with `{REGENERATE}` and commit tests/lint_baseline.txt")


def test_a_new_error_under_a_baselined_code_is_reported_with_its_siblings() -> None:
    a = Finding("mypy", "velesmem/x.py", 3, "index", "Value is not indexable")
    b = Finding("mypy", "velesmem/x.py", 9, "index", "Value is not indexable")
    c = Finding("ruff", "velesmem/x.py", 1, "F401", "unused import")
    assert new_errors([a, c], parse("velesmem/x.py: index 1\nvelesmem/x.py: F401 1\n")) == []
    assert new_errors([a, b, c], parse("velesmem/x.py: index 1\nvelesmem/x.py: F401 1\n")) == [a, b]
    assert new_errors([c], Counter()) == [c]


def test_a_fixed_error_asks_for_the_baseline_to_shrink() -> None:
    a = Finding("mypy", "velesmem/x.py", 3, "index", "Value is not indexable")
    baseline = parse(render(Counter({"velesmem/x.py: index": 2, "velesmem/y.py: E741": 1})))
    assert fixed_errors([a], baseline) == {"velesmem/x.py: index": 1, "velesmem/y.py: E741": 1}
    assert fixed_errors([a, a], parse("velesmem/x.py: index 2\n")) == {}


def main() -> None:
    """Rewrite the baseline from a fresh run of both checkers."""
    counts = count(mypy_findings() + ruff_findings())
    BASELINE.write_text(render(counts), encoding="utf-8")
    print(f"{BASELINE.relative_to(ROOT)}: {sum(counts.values())} errors in {len(counts)} "
          "(file, code) pairs")


if __name__ == "__main__":
    main()

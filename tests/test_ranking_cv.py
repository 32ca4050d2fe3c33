"""bench/ranking_cv.py measures the product's ranking: its BM25 equals the store's, and its
replay of today's fusion returns what ``recall`` returns, on facts from the committed HotpotQA
subset (real SQLite store, hash embedder)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import velesmem
from velesmem.embed import HashEmbedder
from velesmem.ids import to_i64

BENCH = Path(__file__).resolve().parent.parent / "bench"
QUESTIONS = 6


@pytest.fixture
def cv(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """bench/ranking_cv.py imported as a script imports it (bench/ first on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location("velesmem_bench_ranking_cv",
                                                  BENCH / "ranking_cv.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    yield module
    scripts = {p.stem for p in BENCH.glob("*.py")} | {spec.name}
    for name in set(sys.modules) - before:
        if name in scripts:
            del sys.modules[name]


@pytest.fixture
def store(cv: ModuleType) -> object:
    """The first few HotpotQA questions with every sentence of their context as a fact."""
    full = cv.load_hotpot().stores[0]
    keep = sorted(set().union(*full.gold[:QUESTIONS]) | set(range(120)))
    facts = [full.facts[i] for i in keep]
    s = cv.Store(facts, full.questions[:QUESTIONS], [set() for _ in range(QUESTIONS)])
    embedder = HashEmbedder()
    s.vec["hash"] = np.asarray(embedder.embed(facts), dtype=np.float32)
    s.qvec["hash"] = np.asarray(embedder.embed(s.questions), dtype=np.float32)
    cv.bm25_features(s)
    return s


def test_ranking_cv_bm25_equals_the_stores_bm25(cv: ModuleType, store: object,
                                                 tmp_path: Path) -> None:
    with velesmem.open(tmp_path, embedder="hash") as rt:
        ids = [rt.memory.remember(text).id for text in store.facts]  # type: ignore[attr-defined]
        index = {to_i64(i): n for n, i in enumerate(ids)}  # the store's keys are int64
        for qi, question in enumerate(store.questions):  # type: ignore[attr-defined]
            keys, scores = rt.memory.store.text_search(question, None)
            theirs = {index[int(k)]: float(v) for k, v in zip(keys, scores)}
            ours = cv.bm25(store, qi, cv.TODAY_K1, cv.TODAY_B)
            assert theirs, question
            assert set(theirs) == set(np.flatnonzero(ours).tolist())
            for n, score in theirs.items():
                assert ours[n] == pytest.approx(score, rel=1e-9)


def test_ranking_cv_replays_recall_with_todays_defaults(cv: ModuleType, store: object,
                                                       tmp_path: Path) -> None:
    config = cv.Config("sum", cv.TODAY_K1, cv.TODAY_B, cv.TODAY_W["hash"])
    with velesmem.open(tmp_path, embedder="hash") as rt:
        # one scope per fact: no two are linked as versions of each other (supersede reorders
        # recall's results, which the replay does not model)
        ids = [rt.memory.remember(text, metadata={"project": str(n)}).id  # type: ignore[attr-defined]
               for n, text in enumerate(store.facts)]  # type: ignore[attr-defined]
        index = {i: n for n, i in enumerate(ids)}
        for qi, question in enumerate(store.questions):  # type: ignore[attr-defined]
            recalled = [index[m.id] for m in rt.memory.recall(question, k=10).memories]
            assert recalled == cv.rank(store, "hash", qi, config).tolist(), question

"""What the parts of ``VectorIndex`` share: its state, set by ``VectorIndex.__init__``.

``VectorIndex`` is composed of parts by operation: the pending buffer and the indexer thread
(``vector_pending``), the background tombstone rebuild (``vector_rebuild``) and search
(``vector_search``); the class itself keeps construction, size, bulk mutation and persistence.
The tunables stay in ``vector_index`` (read from there at call time, so they can be set per
test), as do the FAISS helpers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import faiss
import numpy as np

if TYPE_CHECKING:
    from velesmem.spawner import Spawner
    from velesmem.store.sqlite.exact import MemoryVectors
    from velesmem.store.sqlite.rwlock import RWLock
    from velesmem.store.sqlite.vector_index import ExactSource
    from velesmem.store.sqlite.vector_rows import RowFile


class VectorState:
    """The state of one ``VectorIndex`` (see ``VectorIndex.__init__`` for what each holds)."""

    dimension: int
    watermark: int
    lock: RWLock
    source: ExactSource
    _index: faiss.IndexIDMap
    _memory: MemoryVectors | None
    _n: int
    _max_abs: float
    _max_norm: float
    _row_ids: np.ndarray
    _dead: np.ndarray
    _sorted: tuple[np.ndarray, np.ndarray, int] | None
    _n_dead: int
    _not_dead_sel: faiss.IDSelector | None
    _sel_keep: tuple[object, ...]
    _p_ids: np.ndarray
    _p_vecs: np.ndarray
    _p_alive: np.ndarray
    _p_head: int
    _p_tail: int
    _p_rows: dict[int, int]
    _cv: threading.Condition
    _indexer: threading.Thread | None
    _spawner: Spawner | None
    _stop: bool
    _rebuilder: threading.Thread | None
    _rebuild_cancel: threading.Event
    _build_hook: Callable[[int], None] | None
    _rows_file: RowFile | None
    _filed: np.ndarray
    _fill_generation: int
    _filler: threading.Thread | None
    _fill_stop: threading.Event
    _p_inexact: set[int]
    _last_search: float
    _tail: tuple[tuple[int, int], np.ndarray, np.ndarray] | None

    if TYPE_CHECKING:  # what one part calls in another
        @property
        def live_count(self) -> int: ...

        @property
        def pending_count(self) -> int: ...

        def _add_main(self, ids: np.ndarray, vectors: np.ndarray,
                      exact: bool | np.ndarray = False) -> None: ...

        def _append_pending(self, ids: np.ndarray, vectors: np.ndarray,
                            exact: bool = True) -> None: ...

        def _file_rows(self, rows: np.ndarray, vectors: np.ndarray) -> None: ...

        def _forget_filed(self) -> None: ...

        def _start_fill(self) -> None: ...

        def _stop_fill(self) -> None: ...

        def exact_vectors(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

        def _cancel_rebuild(self) -> None: ...

        def _needs_rebuild(self) -> bool: ...

        def _start_rebuild(self) -> None: ...

        def _rebuild_locked(self) -> None: ...

        def _lookup(self, ids: np.ndarray) -> np.ndarray: ...

"""Which results touch a version, duplicate or archive edge, asked of the store in one query.

Recall orders versions (``supersedes``), collapses duplicate groups (``duplicate_of``) and hides
archived facts (``consolidated_into``) by walking each result's edges, yet almost no fact has
such an edge. ``Marks`` asks once per batch of new keys which of them touch one; the others skip
their walks, whose answers are known: their own newest version, a group of one, not archived.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from velesmem.store import FactStore


class Marks:
    """The keys seen so far that no edge of ``relations`` touches (``unlinked``), learnt in
    one store query per ``learn`` of new keys."""

    def __init__(self, store: FactStore, relations: Sequence[str]) -> None:
        self._store = store
        self._relations = tuple(relations)
        self._checked: set[int] = set()
        self.unlinked: set[int] = set()

    def learn(self, keys: Iterable[int]) -> None:
        """Ask the store about the keys among ``keys`` not asked about yet (one query)."""
        new = [k for k in dict.fromkeys(keys) if k not in self._checked]
        if not new:
            return
        linked = self._store.related_keys(new, self._relations)
        self._checked.update(new)
        self.unlinked.update(k for k in new if k not in linked)


__all__ = ["Marks"]

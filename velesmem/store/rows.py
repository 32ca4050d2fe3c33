"""Typed reads of the one row a statement always yields (an aggregate, ``RETURNING``, a
``to_regclass`` probe), for both backends: ``scalar(cur)`` for ``cur.fetchone()[0]``, with an
``Internal`` error instead of a ``TypeError`` on ``None``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from velesmem.errors import Internal


class RowCursor(Protocol):
    """A DB-API cursor (sqlite3's or psycopg's), as far as reading one row goes."""

    def fetchone(self) -> Sequence[Any] | None: ...


def one(cursor: RowCursor) -> Sequence[Any]:
    """The row a statement always returns; ``Internal`` if it returned none."""
    row = cursor.fetchone()
    if row is None:
        raise Internal("a statement that always returns a row returned none")
    return row


def scalar(cursor: RowCursor) -> Any:
    """The first column of the row a statement always returns."""
    return one(cursor)[0]

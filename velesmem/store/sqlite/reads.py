"""Reads of facts and edges for ``SqliteStore``: by key, by page, counts, scaffolding, export.

Every read goes through the calling thread's own read connection (``reader()``), so reads never
wait on the writer; ``export`` reads one consistent snapshot in a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from velesmem.ids import to_i64
from velesmem.store import rules
from velesmem.store.predicates import Predicate
from velesmem.store.rows import scalar
from velesmem.store.sqlite import meta_index
from velesmem.store.sqlite.predicates import compile_predicate
from velesmem.store.sqlite.part import (
    FACT_COLUMNS,
    I64_MIN,
    LIVE,
    MAX_BOUND_IDS,
    StorePart,
    fact_from_row,
    in_query,
)
from velesmem.store.types import ConfidenceEvent, Counts, Edge, StoredFact


class ReadPart(StorePart):
    """The fact and edge reads of ``FactStore``, ``SourceStore`` and ``export``."""

    def facts(self, keys: Sequence[int], now: float, *,
              user_only: bool = True) -> dict[int, StoredFact]:
        if not keys:
            return {}
        kind = " AND kind IS NULL" if user_only else ""
        sql = (f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN ({{}}) AND {LIVE}{kind}")
        rows = in_query(self.reader(), sql, list(keys), (now,))
        return {f.key: f for f in map(fact_from_row, rows)}

    def out_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        return [(int(d), r) for d, r in self.reader().execute(
            "SELECT e.dst, e.relation FROM edges e JOIN facts f ON f.id = e.dst "
            f"WHERE e.src = ? AND {rules.live(rules.SQLITE, 'f')} ORDER BY e.id "
            "LIMIT ?", (key, now, limit))]

    def in_edges(self, key: int, now: float, limit: int) -> list[tuple[int, str]]:
        return [(int(s), r) for s, r in self.reader().execute(
            "SELECT e.src, e.relation FROM edges e JOIN facts f ON f.id = e.src "
            f"WHERE e.dst = ? AND {rules.live(rules.SQLITE, 'f')} ORDER BY e.id "
            "LIMIT ?", (key, now, limit))]

    def related_keys(self, keys: Sequence[int], relations: Sequence[str]) -> set[int]:
        wanted = list(dict.fromkeys(int(k) for k in keys))
        rels = list(dict.fromkeys(relations))
        if not wanted or not rels:
            return set()
        named = ",".join("?" * len(rels))
        step = max((MAX_BOUND_IDS - 2 * len(rels)) // 2, 1)  # each chunk is bound twice
        conn = self.reader()
        found: set[int] = set()
        for start in range(0, len(wanted), step):
            chunk = wanted[start:start + step]
            ids = ",".join("?" * len(chunk))
            found.update(int(k) for (k,) in conn.execute(
                f"SELECT src FROM edges WHERE src IN ({ids}) AND relation IN ({named}) "
                f"UNION SELECT dst FROM edges WHERE dst IN ({ids}) AND relation IN ({named})",
                (*chunk, *rels, *chunk, *rels)))
        return found

    def confidence_history(self, key: int, limit: int) -> list[ConfidenceEvent]:
        return [ConfidenceEvent(float(at), float(c), str(cause)) for at, c, cause in
                self.reader().execute(
                    "SELECT at, confidence, cause FROM confidence_events WHERE fact = ? "
                    "ORDER BY id DESC LIMIT ?", (key, limit))]

    def targets(self, key: int) -> list[int]:
        return [int(d) for (d,) in self.reader().execute("SELECT dst FROM edges WHERE src = ?",
                                                         (key,))]

    def counts(self, now: float) -> Counts:
        conn = self.reader()
        facts = scalar(conn.execute(f"SELECT count(*) FROM facts WHERE kind IS NULL AND {LIVE}",
                                    (now,)))
        edges = scalar(conn.execute("SELECT count(*) FROM edges"))
        return Counts(int(facts), int(edges))

    def count_by(self, key: str, now: float) -> dict[str, int]:
        rows = self.reader().execute(
            f"SELECT m.value, count(*) FROM {meta_index.TABLE} m JOIN facts f ON f.id = m.id "
            f"WHERE m.key = ? AND m.type = 'text' AND f.kind IS NULL AND "
            f"{rules.live(rules.SQLITE, 'f')} GROUP BY m.value ORDER BY m.value", (key, now))
        return {str(value): int(n) for value, n in rows}

    def page(self, after: int | None, limit: int, predicate: Predicate, *, include_internal: bool,
             now: float) -> list[StoredFact]:
        compiled = compile_predicate(predicate)
        kind = "" if include_internal else " AND kind IS NULL"
        base = (f"SELECT {FACT_COLUMNS} FROM facts WHERE {LIVE}{kind} AND ({compiled.sql})")
        # u64 order = the non-negative int64 keys ascending, then the negative ones ascending.
        segments: list[tuple[str, int]] = []
        if after is None or after < (1 << 63):
            low = -1 if after is None else after
            segments.append(("id >= 0 AND id > ?", low))
            segments.append(("id < 0 AND id >= ?", I64_MIN))
        else:
            segments.append(("id < 0 AND id > ?", to_i64(after)))
        rows: list[tuple[Any, ...]] = []
        conn = self.reader()
        for where, bound in segments:
            need = limit - len(rows)
            if need <= 0:
                break
            rows += conn.execute(f"{base} AND {where} ORDER BY id LIMIT ?",
                                 (now, *compiled.params, bound, need)).fetchall()
        return [fact_from_row(r) for r in rows]

    def get_internal(self, key: int, now: float) -> StoredFact | None:
        row = self.reader().execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE id = ? AND kind IS NOT NULL AND {LIVE}",
            (key, now)).fetchone()
        return None if row is None else fact_from_row(row)

    def scan_internal(self, kind: str, predicate: Predicate, limit: int,
                      now: float) -> list[StoredFact]:
        compiled = compile_predicate(predicate)
        rows = self.reader().execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE kind = ? AND {LIVE} AND ({compiled.sql}) "
            "ORDER BY seq DESC LIMIT ?", (kind, now, *compiled.params, limit)).fetchall()
        return [fact_from_row(r) for r in rows]

    def export(self, now: float, *, include_internal: bool) -> Iterator[StoredFact | Edge]:
        """Every live fact (u64 id order), then every edge, from one consistent snapshot."""
        from velesmem.store.sqlite.backend import connect  # the backend imports this module

        kind = "" if include_internal else " AND kind IS NULL"
        conn = connect(self.db_path, readonly=True) if not self.readonly else self._write_conn
        try:
            conn.execute("BEGIN")
            rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE {LIVE}{kind}",
                                (now,)).fetchall()
            rows.sort(key=lambda r: r[0] & 0xFFFFFFFFFFFFFFFF)
            yield from map(fact_from_row, rows)
            del rows
            for i, src, dst, rel in conn.execute(
                    "SELECT id, src, dst, relation FROM edges ORDER BY id"):
                yield Edge(int(i), int(src), int(dst), rel)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
            if conn is not self._write_conn:
                conn.close()

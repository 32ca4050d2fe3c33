"""The online migration's side of ``SqliteStore``: a second space and the journal.

A space is built beside the serving one (its vectors in ``space_vectors``, its FAISS index in
``building_index``), writes made meanwhile are journaled, and ``activate_space`` flips serving
in one transaction once the journal is replayed and every fact has its new vector.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from velesmem.errors import Internal, InvalidInput
from velesmem.store.rows import scalar
from velesmem.store.sqlite import spaces, writes
from velesmem.store.sqlite.part import I64_MIN, LIVE, StorePart, journal_bytes
from velesmem.store.sqlite.vector_index import VectorIndex, index_files
from velesmem.store.sqlite.writer import Outcome
from velesmem.store.types import Identity, JournalState, Space, WarmProgress

log = logging.getLogger(__name__)


class MigrationPart(StorePart):
    """``SpaceStore``: the space being built and the journal of writes made meanwhile."""

    def create_space(self, identity: Identity, witness: tuple[float, ...],
                     now: float) -> Future[Space]:
        def job(conn: sqlite3.Connection) -> Outcome[Space]:
            existing = conn.execute("SELECT id FROM spaces WHERE state = 'building'").fetchone()
            if existing is not None:
                raise InvalidInput(f"embedding space {existing[0]} is already being built (a "
                                   "generated destination exists): recover or cancel that "
                                   "migration first")
            cur = conn.execute("INSERT INTO spaces (model, dimension, witness, state, created_at) "
                               "VALUES (?, ?, ?, 'building', ?)",
                               (identity.model, identity.dimension, json.dumps(witness), now))
            space = Space(int(cur.lastrowid or 0), identity, witness)
            for path in index_files(self.directory, space.id):
                path.unlink(missing_ok=True)
            index = VectorIndex(identity.dimension, source=self.vector_source(space))

            def effect() -> None:
                self.building_index = index

            return Outcome(space, effect)

        return self._submit(job)

    def building_space(self) -> Space | None:
        row = self.reader().execute("SELECT id FROM spaces WHERE state = 'building'").fetchone()
        return None if row is None else spaces.read_space(self.reader(), int(row[0]))

    def space_destination(self, space: int) -> str:
        return str(index_files(self.directory, space)[0])

    def load_building_index(self) -> None:
        """The building space's index from its vectors (after a restart), if there is one."""
        space = self.building_space()
        if space is not None and self.building_index is None:
            self.building_index = spaces.rebuild(self.reader(), space, WarmProgress(),
                                                 source=self.vector_source(space))

    def put_vectors(self, space: int, items: Sequence[tuple[int, np.ndarray]]) -> Future[int]:
        def job(conn: sqlite3.Connection) -> Outcome[int]:
            live = writes._live_user_keys(conn, [k for k, _ in items])
            seq = self.next_seq()
            rows = [(space, k, seq, v.astype(np.float32).tobytes()) for k, v in items
                    if k in live]
            conn.executemany("INSERT OR REPLACE INTO space_vectors (space, id, seq, vector) "
                             "VALUES (?, ?, ?, ?)", rows)
            index = self.building_index
            keys = np.asarray([r[1] for r in rows], dtype=np.int64)
            matrix = (np.stack([v for k, v in items if k in live]).astype(np.float32)
                      if rows else None)

            def effect() -> None:
                if index is not None and matrix is not None:
                    index.remove(keys.tolist())  # re-embedded: the new vector replaces it
                    index.bulk_add(keys, matrix)
                    index.add(keys, matrix, seq)

            return Outcome(len(rows), effect)

        return self._submit(job)

    def delete_vectors(self, space: int, keys: Sequence[int]) -> Future[int]:
        def job(conn: sqlite3.Connection) -> Outcome[int]:
            gone = [k for k in keys if conn.execute(
                "DELETE FROM space_vectors WHERE space = ? AND id = ?", (space, k)).rowcount]
            index = self.building_index
            wanted = list(keys)

            def effect() -> None:  # a forget already deleted the row: the index still must go
                if index is not None and wanted:
                    index.remove(wanted)

            return Outcome(len(gone), effect)

        return self._submit(job)

    def space_count(self, space: int) -> int:
        return spaces.vector_count(self.reader(), space)

    def facts_after(self, after: int | None, limit: int, now: float) -> list[tuple[int, str]]:
        where, bound = ("id >= ?", I64_MIN) if after is None else ("id > ?", after)
        return [(int(k), c) for k, c in self.reader().execute(
            f"SELECT id, content FROM facts WHERE kind IS NULL AND {LIVE} AND {where} "
            "ORDER BY id LIMIT ?", (now, bound, limit))]

    def start_journal(self, epoch: str, max_bytes: int) -> Future[None]:
        def job(conn: sqlite3.Connection) -> Outcome[None]:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('journal_epoch', ?)", (epoch,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('journal_max_bytes', ?)",
                         (str(max_bytes),))
            self._journal_epoch, self._journal_max = epoch, max_bytes
            self._journal_bytes = journal_bytes(conn)
            return Outcome(None)

        return self._submit(job)

    def journal(self, limit: int) -> tuple[list[tuple[int, int]], JournalState]:
        conn = self.reader()
        rows = [(int(s), int(k)) for s, k in conn.execute(
            "SELECT seq, key FROM migration_journal ORDER BY seq LIMIT ?", (limit,))]
        entries, size, dirty = conn.execute(
            "SELECT count(*), coalesce(sum(bytes), 0), count(DISTINCT key) FROM "
            "migration_journal").fetchone()
        return rows, JournalState(self._journal_epoch, int(entries), int(size), int(dirty))

    def ack_journal(self, upto: int) -> Future[None]:
        def job(conn: sqlite3.Connection) -> Outcome[None]:
            conn.execute("DELETE FROM migration_journal WHERE seq <= ?", (upto,))
            self._journal_bytes = journal_bytes(conn)
            return Outcome(None)

        return self._submit(job)

    def stop_journal(self) -> Future[None]:
        def job(conn: sqlite3.Connection) -> Outcome[None]:
            conn.execute("DELETE FROM meta WHERE key IN ('journal_epoch', 'journal_max_bytes')")
            conn.execute("DELETE FROM migration_journal")
            self._journal_epoch, self._journal_bytes = None, 0
            return Outcome(None)

        return self._submit(job)

    def activate_space(self, space: int, witness: tuple[float, ...]) -> Future[None]:
        def job(conn: sqlite3.Connection) -> Outcome[None]:
            new = spaces.read_space(conn, space)
            if new is None:
                raise Internal(f"embedding space {space} does not exist")
            # Checked here, in the writer, so that no write can land between check and flip.
            pending = scalar(conn.execute("SELECT count(*) FROM migration_journal"))
            if pending:
                raise Internal(f"{pending} writes are not yet in the new space: not activated")
            facts = scalar(conn.execute("SELECT count(*) FROM facts WHERE kind IS NULL"))
            vectors = spaces.vector_count(conn, space)
            if facts != vectors:
                raise Internal(f"the new space holds {vectors} vectors for {facts} facts: "
                               "not activated")
            old = self.serving
            conn.execute("UPDATE spaces SET state = 'retired' WHERE state = 'serving'")
            conn.execute("UPDATE spaces SET state = 'serving', witness = ? WHERE id = ?",
                         (json.dumps(witness), space))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('serving_space', ?)", (str(space),))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('provenance_model', ?)",
                         (new.identity.model,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('provenance_dimension', ?)",
                         (str(new.identity.dimension),))
            if old is not None:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('migrated_from', ?)",
                             (old.identity.model,))
            index = self.building_index
            if index is None:
                index = spaces.rebuild(conn, new, WarmProgress(), source=self.vector_source(new))
            index.watermark = self.seq
            retiring = self.index

            def effect() -> None:
                self.serving = Space(new.id, new.identity, witness)
                self.index = index
                self.building_index = None
                if self._spawner is not None:
                    index.keep_exact_rows(self.directory)
                    index.start_indexer(self._spawner)
                if retiring is not None:
                    retiring.stop_indexer()
                    retiring.drop_exact_rows()
                log.info("embedding space %d (%s) now serves; space %s retired", new.id,
                         new.identity.model, None if old is None else old.id)

            return Outcome(None, effect)

        return self._submit(job)

    def drop_space(self, space: int) -> Future[None]:
        def job(conn: sqlite3.Connection) -> Outcome[None]:
            if self.serving is not None and self.serving.id == space:
                raise InvalidInput(f"embedding space {space} serves: it cannot be dropped")
            conn.execute("DELETE FROM space_vectors WHERE space = ?", (space,))
            conn.execute("DELETE FROM vector_deletes WHERE space = ?", (space,))
            conn.execute("DELETE FROM spaces WHERE id = ?", (space,))
            building = self.building_index

            def effect() -> None:
                for path in index_files(self.directory, space):
                    path.unlink(missing_ok=True)
                if building is not None and self.building_space() is None:
                    self.building_index = None

            return Outcome(None, effect)

        return self._submit(job)

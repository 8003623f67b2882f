"""The memory graph in mnemo's SQLite database: the :class:`~mnemo.graph.engine.GraphEngine` behind every
graph opened on a path or an SQLite connection. Full text through FTS5 (BM25 scores), vectors in
memory-mapped files beside the database (see :mod:`mnemo.graph.vectors`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ... import _db
from ...database import connect_owned
from ...embeddings.synced import snapshot
from ...embeddings.vector_file import directory_for
from ...graph.engine import GraphEngine
from ...graph.recall import COMMON_MATCHES, PHRASE_WINDOW
from ...graph.schema import SCOPE_CLAUSE, ensure_schema, scope_params
from ...graph.vectors import VectorCache
from ...scope import Scope

if TYPE_CHECKING:
    from ...embeddings.protocol import Embedder

# A matched source's size (memories of the scope written from it), selected beside its grouped matches; the
# scope's ids are bound first.
SOURCE_SIZE = (
    "(SELECT t.memories FROM graph_tallies t WHERE t.user_id = ? AND t.agent_id = ? AND t.channel_id = ?"
    " AND t.field = 'source' AND t.value = m.source)"
)


class SqliteEngine(GraphEngine):
    """The graph in mnemo's SQLite database: a path (opened and owned here, with vector files beside it) or a
    borrowed connection (left open, vectors read into memory)."""

    def __init__(self, database: str | Path | sqlite3.Connection) -> None:
        self._path: Path | None = None
        vector_dir = None
        if isinstance(database, sqlite3.Connection):
            self.conn = database
            self._owns = False
        else:
            self.conn = connect_owned(database)
            self._owns = True
            # Only beside a database this graph opened itself: never next to one it merely borrows.
            vector_dir = directory_for(database)
            self._path = None if vector_dir is None else Path(database)
        self.vectors = VectorCache(vector_dir)
        self.reads_apart = self._path is not None
        # SQLite's own pow() is a compile-time option.
        self.conn.create_function("mnemo_pow", 2, _pow, deterministic=True)
        ensure_schema(self.conn)

    @contextmanager
    def write(self, scopes: Iterable[Scope], *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        # A WAL database's commits do not wait for the disk anyway (synchronous = NORMAL).
        with _db.write_transaction(self.conn) as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")

    @contextmanager
    def purging(self) -> Iterator[None]:
        # Zero freed pages so purged text does not linger in the file.
        self.conn.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA secure_delete = OFF")

    def after_purge(self, conn: sqlite3.Connection) -> None:
        # The index keeps deleted tokens in old segments until a merge; force it.
        conn.execute("INSERT INTO graph_memories_fts (graph_memories_fts) VALUES ('optimize')")

    def close(self) -> None:
        if self._owns:
            _db.close(self.conn)

    def has_table(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def plain(self, column: str) -> str:
        return f"+{column}"  # unary + hides the column from the planner's index choice

    def indexed_by(self, index: str) -> str:
        return f" INDEXED BY {index}"

    def greatest(self, *values: str) -> str:
        return f"max({', '.join(values)})"

    def power(self, base: str, exponent: str) -> str:
        return f"mnemo_pow({base}, {exponent})"

    def matrix(self, values: Sequence[bytes], dim: int) -> np.ndarray:
        return np.frombuffer(b"".join(values), dtype=np.float32).reshape(len(values), dim)

    def top(self, conn: sqlite3.Connection, scope: Scope) -> int:
        # Writers are serialised database-wide, so every seq below the largest is committed.
        return conn.execute("SELECT COALESCE(MAX(seq), 0) FROM graph_memories").fetchone()[0]

    def first_pending(self, scope: Scope, model: str, dim: int) -> int | None:
        if self._path is None:
            return None
        conn = _db.connect(self._path)
        try:
            with snapshot(conn):
                row = conn.execute(
                    "SELECT m.seq FROM graph_memories m LEFT JOIN graph_vectors v ON v.memory_id = m.id"
                    " WHERE +m.user_id = ? AND +m.agent_id = ? AND +m.channel_id = ?"
                    " AND (v.memory_id IS NULL OR v.model != ? OR v.dim != ?) ORDER BY m.seq LIMIT 1",
                    (*scope_params(scope), model, dim),
                ).fetchone()
                top = self.top(conn, scope)
            return top if row is None else row[0] - 1
        finally:
            conn.close()

    def count_matches(self, conn: sqlite3.Connection, expressions: Sequence[str], limit: int) -> list[int]:
        return [
            conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM graph_memories_fts WHERE graph_memories_fts MATCH ? LIMIT ?)",
                (expression, limit),
            ).fetchone()[0]
            for expression in expressions
        ]

    def text_candidates(
        self, conn: sqlite3.Connection, scope: Scope, expression: str, alive: str, count: int, matches: Mapping[str, int]
    ) -> dict[str, float]:
        # Ordered by FTS5's own rank column (bm25 with the default weights, as no rank is configured):
        # FTS5 sorts its matches itself and the join then reads memories only until ``count`` are found, where
        # ordering by a bm25() expression read every matching memory before sorting (a third of the query at
        # 100k memories).
        rows = conn.execute(
            "SELECT m.id, graph_memories_fts.rank FROM graph_memories_fts"
            " JOIN graph_memories m ON m.seq = graph_memories_fts.rowid"
            " WHERE graph_memories_fts MATCH ? AND graph_memories_fts.rowid >= ?"
            f" AND {SCOPE_CLAUSE}{alive} ORDER BY graph_memories_fts.rank LIMIT ?",
            (expression, self._recent_start(conn, matches), *scope_params(scope), count),
        ).fetchall()
        return {r[0]: -r[1] for r in rows}

    @staticmethod
    def _recent_start(conn: sqlite3.Connection, matches: Mapping[str, int]) -> int:
        """Where the ranking's walk starts: 0, unless every word of the query is common. Recall then keeps them
        all (see ``_text_query``), and bm25 would walk every match of each (80-100 ms for four such words at
        100k memories); the walk starts where the commonest word has its ``PHRASE_WINDOW`` newest matches,
        as the archive looks at common words only in their recent stretch."""
        if not matches or any(found < COMMON_MATCHES for found in matches.values()):
            return 0
        starts = [
            conn.execute(
                "SELECT rowid FROM graph_memories_fts WHERE graph_memories_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (phrase, PHRASE_WINDOW - 1),
            ).fetchone()
            for phrase in matches
        ]
        return max((row[0] for row in starts if row is not None), default=0)

    def source_matches(
        self, conn: sqlite3.Connection, scope: Scope, phrases: Sequence[str], alive: str
    ) -> list[list[tuple[str, int, int | None]]]:
        return [
            [tuple(row) for row in conn.execute(
                f"SELECT m.source, count(*), {SOURCE_SIZE} FROM graph_memories_fts"
                " JOIN graph_memories m ON m.seq = graph_memories_fts.rowid"
                f" WHERE graph_memories_fts MATCH ? AND {SCOPE_CLAUSE} AND m.source != ''{alive} GROUP BY m.source",
                (*scope_params(scope), phrase, *scope_params(scope)),
            )]
            for phrase in phrases
        ]  # fmt: skip

    def store_vectors(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, ids: Sequence[str], vectors: np.ndarray
    ) -> None:
        # REPLACE deletes and inserts, so a re-embedded memory's vector gets a new seq for the vector files.
        conn.executemany(
            "INSERT OR REPLACE INTO graph_vectors (memory_id, model, dim, vector)"
            " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM graph_memories WHERE id = ?)",
            [(i, embedder.name, embedder.dim, v.tobytes(), i) for i, v in zip(ids, vectors, strict=True)],
        )


def _pow(base: float, exponent: float) -> float:
    return math.pow(base, exponent)

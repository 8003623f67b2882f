"""Where the memory graph's rows live: the seam between the graph and its database engine.

:class:`~mnemo.graph.MemoryGraph`, its recall, maintenance, extraction and bulletin write their SQL once, with
``?`` placeholders, against :attr:`GraphEngine.conn`. What differs between engines is here: how a write
transaction serialises writers, how full text is matched and scored, where vectors are searched, and the
few SQL spellings the two dialects do not share. :class:`SqliteEngine` keeps the graph in mnemo's SQLite
database (FTS5 and memory-mapped vector files); :class:`mnemo.postgres.graph.PostgresEngine` in PostgreSQL
(``tsvector`` and pgvector).
"""

from __future__ import annotations

import math
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import _db
from ..database import connect_owned
from ..embeddings.synced import snapshot
from ..embeddings.vector_file import directory_for
from .schema import SCOPE_CLAUSE, ensure_schema, scope_params
from .types import Scope
from .vectors import VectorCache

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..embeddings.protocol import Embedder

Hits = list[tuple[Any, float]]


class VectorIndex(Protocol):
    """Nearest memories by cosine among one scope's vectors of one model."""

    def search(self, conn: Any, scope: Scope, embedder: Embedder, probe: np.ndarray, k: int) -> Hits: ...

    def search_many(
        self, conn: Any, scope: Scope, embedder: Embedder, probes: np.ndarray, k: int, min_score: float
    ) -> list[Hits]: ...

    def prefetch(self, conn: Any, scope: Scope, embedder: Embedder, probe: Future[np.ndarray], k: int) -> None: ...

    def forget(self, conn: Any, scope: Scope, vectors: Iterable[tuple[int, str, int]]) -> None: ...


# A matched source's size (memories of the scope written from it), selected beside its grouped matches; the
# scope's ids are bound first.
SOURCE_SIZE = (
    "(SELECT t.memories FROM graph_tallies t WHERE t.user_id = ? AND t.agent_id = ? AND t.channel_id = ?"
    " AND t.field = 'source' AND t.value = m.source)"
)


class GraphEngine(ABC):
    """One database holding the graph, as the graph's code needs it. ``conn`` runs statements (``execute``,
    ``executemany``, with ``?`` or ``:name`` placeholders, rows readable by name); the graph's own lock
    serialises its use within a process."""

    conn: Any
    vectors: VectorIndex
    #: The spelling of "equal, NULLs included" (``a IS b`` in SQLite).
    same: str = "IS"
    #: Whether :meth:`first_pending` can run (on a connection of its own).
    reads_apart: bool = True

    @abstractmethod
    def write(self, scopes: Iterable[Scope], *, durable: bool = True) -> Iterator[Any]:
        """A write transaction (a context manager giving ``conn``) of work confined to ``scopes``: committed
        when the block ends, rolled back when it raises; writers to a scope run one at a time. With
        ``durable=False`` the commit need not wait for the disk (a crash may lose the last such writes,
        never part of one): for hints such as access times."""

    @abstractmethod
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: every statement in the block sees one state of the database."""

    @contextmanager
    def purging(self) -> Iterator[None]:
        """Around a purge: whatever makes deleted text unrecoverable afterwards."""
        yield

    def after_purge(self, conn: Any) -> None:  # noqa: B027 - most engines need nothing here
        """Inside the purge's transaction, after the rows are deleted."""

    @abstractmethod
    def close(self) -> None:
        """Close what this engine opened."""

    @abstractmethod
    def has_table(self, name: str) -> bool:
        """Whether the database holds ``name`` (another component's table: the archive's ``messages``)."""

    # -- dialect -----------------------------------------------------------------------------------

    def plain(self, column: str) -> str:
        """``column`` in a condition the planner should not drive an index scan by."""
        return column

    def indexed_by(self, index: str) -> str:
        """A hint, after a table name, to read it through ``index`` (where the dialect has one)."""
        return ""

    @abstractmethod
    def greatest(self, *values: str) -> str:
        """The largest of several SQL values (none NULL)."""

    @abstractmethod
    def power(self, base: str, exponent: str) -> str:
        """``base`` raised to ``exponent``, in SQL."""

    def vector_values(self, column: str) -> str:
        """A stored vector column as :meth:`matrix` reads it."""
        return column

    @abstractmethod
    def matrix(self, values: Sequence[Any], dim: int) -> np.ndarray:
        """Stored vectors, as :meth:`vector_values` selected them, as a float32 matrix of ``dim`` columns."""

    # -- sequence ----------------------------------------------------------------------------------

    @abstractmethod
    def top(self, conn: Any, scope: Scope) -> int:
        """A ``seq`` such that every memory of ``scope`` at or below it that will ever be visible already is."""

    def latest(self, conn: Any) -> int:
        """The largest ``seq`` of any scope that is visible now, read from the primary key at once: while it
        stays the same, nothing new has been written anywhere."""
        return int(conn.execute("SELECT COALESCE(max(seq), 0) FROM graph_memories").fetchone()[0])

    @abstractmethod
    def first_pending(self, scope: Scope, model: str, dim: int) -> int | None:
        """How far every memory of ``scope`` has a vector of ``model`` (the seq below the first without,
        or the top when none lacks one), read on a connection of its own, so a worker thread can find it
        off the recall's path; ``None`` when there is no other connection to read it on."""

    # -- full text ---------------------------------------------------------------------------------

    @abstractmethod
    def count_matches(self, conn: Any, expressions: Sequence[str], limit: int) -> list[int]:
        """How many memories (all scopes) match each of the FTS5-syntax ``expressions``, counted up to ``limit``."""

    @abstractmethod
    def text_candidates(
        self, conn: Any, scope: Scope, expression: str, alive: str, count: int, matches: Mapping[str, int]
    ) -> dict[str, float]:
        """The ``count`` best full-text matches of ``expression`` in ``scope`` with their BM25 (larger is
        better); ``alive`` is an extra condition on ``m``; ``matches`` holds :meth:`count_matches` of the
        phrases already counted."""

    @abstractmethod
    def source_matches(
        self, conn: Any, scope: Scope, phrases: Sequence[str], alive: str
    ) -> list[list[tuple[str, int, int | None]]]:
        """For each of ``phrases``: ``(source, memories matching it, memories in all or None)`` for each
        non-empty source of ``scope`` that has any (the size read in the same statement, with
        :data:`SOURCE_SIZE`)."""

    # -- vectors -----------------------------------------------------------------------------------

    @abstractmethod
    def store_vectors(
        self, conn: Any, scope: Scope, embedder: Embedder, ids: Sequence[str], vectors: np.ndarray
    ) -> None:
        """Store (or replace) each memory's vector, inside the caller's write; a memory purged meanwhile
        gets none."""


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
        rows = conn.execute(
            "SELECT m.id, bm25(graph_memories_fts) AS rank FROM graph_memories_fts"
            " JOIN graph_memories m ON m.seq = graph_memories_fts.rowid"
            f" WHERE graph_memories_fts MATCH ? AND {SCOPE_CLAUSE}{alive} ORDER BY rank LIMIT ?",
            (expression, *scope_params(scope), count),
        ).fetchall()
        return {r[0]: -r[1] for r in rows}

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


def open_engine(database: str | Path | sqlite3.Connection) -> GraphEngine:
    """The engine for ``database``: a ``postgresql://`` URL, an SQLite path, or an open SQLite connection."""
    from ..postgres.connection import is_url

    if is_url(database):
        from ..postgres.graph import PostgresEngine

        return PostgresEngine(str(database))
    return SqliteEngine(database)

"""Where the memory graph's rows live: the storage protocol the graph needs from a database engine.

:class:`~mnemo.graph.MemoryGraph`, its recall, maintenance, extraction and bulletin write their SQL once, with
``?`` placeholders, against :attr:`GraphEngine.conn`. What differs between engines is declared here: how a
write transaction serialises writers, how full text is matched and scored, where vectors are searched, and
the few SQL spellings the two dialects do not share. The engines themselves live below the seam, in
:mod:`mnemo.backends` (SQLite: :mod:`mnemo.backends.sqlite.graph`; PostgreSQL:
:mod:`mnemo.backends.postgres.graph`); :func:`mnemo.storage.open_graph` picks one from the database named.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .types import Scope

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

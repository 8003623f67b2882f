"""The graph's vectors for search: one :class:`~mnemo.embeddings.synced.SyncedVectors` per scope and model.

SQLite is the truth. Each scope's vectors of one model live in a memory-mapped vector file beside the
database (in ``<database>-vectors/``), so a new process searches them at once instead of reading them all
from SQLite (3 s at 100,000 memories); rows newer than the file are read by ``seq`` and appended to it, so
another process's embeddings appear at its next search. Every hit is resolved to its memory through the
database, so a stale or damaged file can never put a vector on the wrong memory. Without a directory
(a borrowed connection, an in-memory database) the vectors are read into memory, as they always were.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..embeddings.queries import background
from ..embeddings.synced import Candidates, SyncedVectors, owners_of, table_top
from ..embeddings.vector_file import file_name
from .schema import SCOPE_CLAUSE, scope_params
from .types import Scope

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder


_Key = tuple[Scope, str, int]
Hits = list[tuple[Hashable, float]]


@dataclass(frozen=True, slots=True)
class GraphVectorSource:
    """The ``graph_vectors`` rows of one scope and model (a :class:`~mnemo.embeddings.synced.VectorSource`)."""

    scope: Scope
    model: str
    dim: int

    @property
    def key(self) -> str:
        return "\x1f".join(("graph", *scope_params(self.scope), self.model, str(self.dim)))

    def rows_after(self, conn: sqlite3.Connection, seq: int) -> list[tuple[int, Hashable, bytes]]:
        return conn.execute(
            # CROSS JOIN fixes the loop order: walk the new vectors by seq, then check each one's scope.
            "SELECT v.seq, v.memory_id, v.vector FROM graph_vectors v CROSS JOIN graph_memories m"
            f" ON m.id = v.memory_id WHERE v.seq > ? AND v.model = ? AND v.dim = ? AND {SCOPE_CLAUSE}"
            " ORDER BY v.seq",
            (seq, self.model, self.dim, *scope_params(self.scope)),
        ).fetchall()

    def top(self, conn: sqlite3.Connection) -> int:
        # The cursor moves past every vector of the table, not just this scope's and model's: stopping at
        # this scope's last one made every search re-read the other scopes' newer vectors (34 ms per recall
        # at 100k memories with 10k more in a second scope).
        return table_top(conn, "graph_vectors")

    def owners(self, conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, Hashable]:
        return owners_of(conn, "graph_vectors", "memory_id", seqs)


@dataclass(frozen=True, slots=True)
class _Prefetch:
    probe: Future[np.ndarray]
    version: int
    k: int
    candidates: Future[Candidates]


class VectorCache:
    """Vectors keyed by ``(scope, model, dim)``, each kept in a file under ``directory`` (or in memory
    when ``directory`` is None).

    :meth:`prefetch` lets a recall start its vector search in a worker thread, as soon as the query's
    vector is ready, while the recall runs its SQL; :meth:`search` then uses that result if the vectors
    have not changed since and the probe is the same, and searches itself otherwise.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._partitions: dict[_Key, SyncedVectors] = {}
        self._prefetched: dict[_Key, _Prefetch] = {}
        self._lock = threading.Lock()

    def search(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probe: np.ndarray, k: int
    ) -> Hits:
        """The ``k`` nearest memory ids to ``probe`` in ``scope``, among vectors of ``embedder``'s model."""
        vectors = self._current(conn, scope, embedder.name, embedder.dim)
        key = (scope, embedder.name, embedder.dim)
        with self._lock:
            ahead = self._prefetched.pop(key, None)
        # A prefetched search that failed is simply run again here, which reports a lasting problem.
        if (
            ahead is not None and ahead.version == vectors.version and k <= ahead.k
            and _same_probe(ahead.probe, probe) and ahead.candidates.exception() is None
        ):  # fmt: skip
            return vectors.search(conn, probe, k, ahead.candidates.result())
        return vectors.search(conn, probe, k)

    def search_many(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probes: np.ndarray, k: int, min_score: float
    ) -> list[Hits]:
        """:meth:`search` for each row of ``probes`` at once, keeping scores of at least ``min_score``."""
        return self._current(conn, scope, embedder.name, embedder.dim).search_many(conn, probes, k, min_score)

    def prefetch(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probe: Future[np.ndarray], k: int
    ) -> None:
        """Catch the vectors up now and search them for ``probe`` (a vector still being computed) in a
        worker thread once it is ready, for a later :meth:`search` with that vector and at most ``k``."""
        vectors = self._current(conn, scope, embedder.name, embedder.dim)
        key = (scope, embedder.name, embedder.dim)
        found: Future[Candidates] = Future()

        def run(done: Future[np.ndarray]) -> None:
            try:
                found.set_result(vectors.nearest(done.result(), k))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the candidates
                found.set_exception(exc)

        with self._lock:
            self._prefetched[key] = _Prefetch(probe, vectors.version, k, found)
        probe.add_done_callback(lambda done: background().submit(run, done))

    def forget(self, conn: sqlite3.Connection, scope: Scope, vectors: Iterable[tuple[int, str, int]]) -> None:
        """Erase purged vectors, given as ``(seq, model, dim)`` of ``scope``, from memory and from their
        files (call after the purge committed)."""
        by_model: dict[tuple[str, int], list[int]] = {}
        for seq, model, dim in vectors:
            by_model.setdefault((model, dim), []).append(seq)
        for (model, dim), seqs in by_model.items():
            self._partition(scope, model, dim).erase(conn, seqs)

    def _partition(self, scope: Scope, model: str, dim: int) -> SyncedVectors:
        key = (scope, model, dim)
        with self._lock:
            vectors = self._partitions.get(key)
            if vectors is None:
                source = GraphVectorSource(scope, model, dim)
                path = None if self.directory is None else self.directory / file_name(source.key)
                vectors = self._partitions[key] = SyncedVectors(source, path)
            return vectors

    def _current(self, conn: sqlite3.Connection, scope: Scope, model: str, dim: int) -> SyncedVectors:
        vectors = self._partition(scope, model, dim)
        vectors.refresh(conn)
        return vectors


def _same_probe(prefetched: Future[np.ndarray], probe: np.ndarray) -> bool:
    # A recall's probe comes from this very future, so it is done by now; anything else is not ours.
    if not prefetched.done() or prefetched.cancelled() or prefetched.exception() is not None:
        return False
    return np.array_equal(prefetched.result().reshape(-1), np.asarray(probe).reshape(-1))

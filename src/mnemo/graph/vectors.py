"""The graph's vectors in memory: one :class:`~mnemo.embeddings.VectorIndex` per scope and model.

SQLite is the truth; the index is a cache of the current model's vectors for one scope. It catches up by
reading only vectors with a ``seq`` above the last one it saw, so another process's embeddings appear at
its next search without reloading everything. A vector that disappears (a purge elsewhere) may linger in
the index; recall drops candidates whose memory no longer exists, so that is harmless.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from .schema import SCOPE_CLAUSE, scope_params
from .types import Scope

if TYPE_CHECKING:
    from ..embeddings.index import VectorIndex
    from ..embeddings.protocol import Embedder


class VectorCache:
    """Indexes keyed by ``(scope, model, dim)``, each with the highest vector ``seq`` it holds."""

    def __init__(self) -> None:
        self._indexes: dict[tuple[Scope, str, int], tuple[VectorIndex, int]] = {}
        self._lock = threading.Lock()

    def search(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probe: np.ndarray, k: int
    ) -> list[tuple[Hashable, float]]:
        """The ``k`` nearest memory ids to ``probe`` in ``scope``, among vectors of ``embedder``'s model."""
        index = self._current(conn, scope, embedder)
        return index.search(probe, k)

    def forget(self, memory_ids: Iterable[str]) -> None:
        """Drop purged memories from every index."""
        ids = list(memory_ids)
        with self._lock:
            for index, _ in self._indexes.values():
                index.remove(ids)

    def _current(self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder) -> VectorIndex:
        from ..embeddings.index import BruteForceIndex

        key = (scope, embedder.name, embedder.dim)
        with self._lock:
            index, seen = self._indexes.get(key) or (BruteForceIndex(embedder.dim), 0)
            with _snapshot(conn):
                rows = conn.execute(
                    # CROSS JOIN fixes the loop order: walk the new vectors by seq, then check each one's scope.
                    "SELECT v.seq, v.memory_id, v.vector FROM graph_vectors v CROSS JOIN graph_memories m"
                    f" ON m.id = v.memory_id WHERE v.seq > ? AND v.model = ? AND v.dim = ? AND {SCOPE_CLAUSE}"
                    " ORDER BY v.seq",
                    (seen, embedder.name, embedder.dim, *scope_params(scope)),
                ).fetchall()
                # The cursor moves past every vector this snapshot holds, not just this scope's and model's:
                # stopping at this scope's last one made every search re-read the other scopes' newer vectors
                # (34 ms per recall at 100k memories with 10k more in a second scope).
                top = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM graph_vectors").fetchone()[0]
            if rows:
                # A memory re-embedded twice since the last look appears once, with its newest vector.
                latest = {r[1]: r[2] for r in rows}
                matrix = np.frombuffer(b"".join(latest.values()), dtype=np.float32).reshape(len(latest), embedder.dim)
                index.add(list(latest), matrix)
            self._indexes[key] = (index, max(seen, top))
            return index


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot for the enclosed reads (the caller's own transaction, when it has one open).

    Seqs are assigned under the write lock, so once ``MAX(seq)`` is read in a snapshot, every vector
    committed later has a higher seq: the cursor can never skip one.
    """
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")

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
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..embeddings.queries import background
from .schema import SCOPE_CLAUSE, scope_params
from .types import Scope

if TYPE_CHECKING:
    from ..embeddings.index import VectorIndex
    from ..embeddings.protocol import Embedder


_Key = tuple[Scope, str, int]
Hits = list[tuple[Hashable, float]]


@dataclass(frozen=True, slots=True)
class _Prefetch:
    probe: Future[np.ndarray]
    version: int
    k: int
    hits: Future[Hits]


class VectorCache:
    """Indexes keyed by ``(scope, model, dim)``, each with the highest vector ``seq`` it holds.

    :meth:`prefetch` lets a recall start its vector search in a worker thread, as soon as the query's
    vector is ready, while the recall runs its SQL; :meth:`search` then uses that result if the index
    has not changed since and the probe is the same, and searches itself otherwise.
    """

    def __init__(self) -> None:
        self._indexes: dict[_Key, tuple[VectorIndex, int]] = {}
        self._versions: dict[_Key, int] = {}  # bumped whenever an index's content changes
        self._prefetched: dict[_Key, _Prefetch] = {}
        self._lock = threading.Lock()

    def search(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probe: np.ndarray, k: int
    ) -> Hits:
        """The ``k`` nearest memory ids to ``probe`` in ``scope``, among vectors of ``embedder``'s model."""
        index = self._current(conn, scope, embedder)
        key = (scope, embedder.name, embedder.dim)
        with self._lock:
            ahead = self._prefetched.pop(key, None)
            version = self._versions.get(key, 0)
        # A prefetched search that failed is simply run again here, which reports a lasting problem.
        if (
            ahead is not None and ahead.version == version and k <= ahead.k and _same_probe(ahead.probe, probe)
            and ahead.hits.exception() is None
        ):  # fmt: skip
            return ahead.hits.result()[:k]
        return index.search(probe, k)

    def search_many(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probes: np.ndarray, k: int, min_score: float
    ) -> list[Hits]:
        """:meth:`search` for each row of ``probes`` at once, keeping scores of at least ``min_score``."""
        index = self._current(conn, scope, embedder)
        many = getattr(index, "search_many", None)
        if many is not None:
            return many(probes, k, min_score)
        return [[h for h in index.search(p, k) if h[1] >= min_score] for p in np.asarray(probes, dtype=np.float32)]

    def prefetch(
        self, conn: sqlite3.Connection, scope: Scope, embedder: Embedder, probe: Future[np.ndarray], k: int
    ) -> None:
        """Catch the index up now and search it for ``probe`` (a vector still being computed) in a worker
        thread once the vector is ready, for a later :meth:`search` with that vector and at most ``k``."""
        index = self._current(conn, scope, embedder)
        key = (scope, embedder.name, embedder.dim)
        hits: Future[Hits] = Future()

        def run(done: Future[np.ndarray]) -> None:
            try:
                hits.set_result(index.search(done.result(), k))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the hits
                hits.set_exception(exc)

        with self._lock:
            self._prefetched[key] = _Prefetch(probe, self._versions.get(key, 0), k, hits)
        probe.add_done_callback(lambda done: background().submit(run, done))

    def forget(self, memory_ids: Iterable[str]) -> None:
        """Drop purged memories from every index."""
        ids = list(memory_ids)
        with self._lock:
            for key, (index, _) in self._indexes.items():
                index.remove(ids)
                self._versions[key] = self._versions.get(key, 0) + 1

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
                self._versions[key] = self._versions.get(key, 0) + 1
            self._indexes[key] = (index, max(seen, top))
            return index


def _same_probe(prefetched: Future[np.ndarray], probe: np.ndarray) -> bool:
    # A recall's probe comes from this very future, so it is done by now; anything else is not ours.
    if not prefetched.done() or prefetched.cancelled() or prefetched.exception() is not None:
        return False
    return np.array_equal(prefetched.result().reshape(-1), np.asarray(probe).reshape(-1))


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

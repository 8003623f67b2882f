"""The archive's vector channel on PostgreSQL: message embeddings in ``message_vectors``, searched by pgvector.

As on SQLite, messages are embedded lazily in bounded batches (at search time, or all at once by
:meth:`PostgresMessageVectors.embed_pending`), so appending costs nothing extra. The nearest neighbours come
from an HNSW index (cosine distance) built per embedding model: a partial index over that model's rows with
the column cast to its dimension at half precision, since one table holds the vectors of whichever models a
team has used (:class:`HnswIndex`, which the graph's vectors use too). Every scope's vectors share that index;
a search is confined to its archive's scope in the query itself, so a reader among many users of one home gets
its own nearest messages rather than a share of everyone's.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Collection
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ...archive.search import SESSION_SCOPE_CLAUSE
from ...embeddings.queries import query_vectors_of
from .connection import EF_SEARCH, Executor, PostgresDatabase

if TYPE_CHECKING:
    from ...embeddings.protocol import Embedder
    from ...scope import Scope

EMBED_PER_SEARCH = 256
EMBED_BATCH = 64
_PENDING = (
    "FROM messages m LEFT JOIN message_vectors v ON v.message_id = m.id"
    " WHERE m.id > ? AND m.content <> '' AND (v.message_id IS NULL OR v.model <> ? OR v.dim <> ?)"
)


class HnswIndex(NamedTuple):
    """The HNSW index (cosine) of one embedding model's rows of a table's vector column.

    The index holds the vectors at half precision (pgvector's ``halfvec``): half the pages of full-precision
    nodes, so a walk reads fewer of them (a 100k graph's search, p50 13.9 -> 8.7 ms), while the nearest 100
    it finds are as many of the exact nearest as before (0.85 at ``ef_search`` 200, both). Scores are still
    computed from the stored full-precision vectors."""

    #: The index's name: the table's, then a digest of the model, its dimension and the index's kind.
    name: str
    #: The condition selecting the model's rows, the model's name written in: a partial index serves only
    #: conditions the planner can match, whatever the plan cache does with parameters.
    rows: str
    #: ``<=>`` from this to ``CAST(? AS halfvec)`` is what the index orders by.
    order: str
    #: The column at the model's dimension, for scores at full precision.
    full: str
    #: The index's definition.
    create: str


@functools.lru_cache(maxsize=64)
def hnsw_index(table: str, column: str, model: str, dim: int) -> HnswIndex:
    """The HNSW index of ``model``'s ``dim``-dimensional vectors in ``table.column`` (every search asks)."""
    digest = hashlib.blake2b(f"{model}\x1f{dim}\x1fhalfvec".encode(), digest_size=6).hexdigest()
    name = f"{table}_hnsw_{digest}"
    rows = f"model = '{model.replace(chr(39), chr(39) * 2)}' AND dim = {int(dim)}"
    order = f"CAST({column} AS halfvec({int(dim)}))"
    create = f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ({order} halfvec_cosine_ops) WHERE {rows}"
    return HnswIndex(name, rows, order, f"CAST({column} AS vector({int(dim)}))", create)


def build_hnsw(executor: Executor, index: HnswIndex) -> None:
    """Create ``index`` unless it exists, inside the caller's transaction; processes doing it at once take
    turns (two concurrent ``CREATE INDEX IF NOT EXISTS`` can still collide)."""
    executor.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (index.name,))
    executor.execute(index.create)


def rebuild_hnsw(executor: Executor, table: str, column: str) -> None:
    """A migration step: replace ``table``'s HNSW indexes of earlier releases (full precision) with the
    current kind, one per model the table holds. It reads every vector once, so it takes a while on a
    large table (~2 min per 100k 384-dimensional vectors on two cores with the default
    ``maintenance_work_mem``)."""
    current = {
        hnsw_index(table, column, model, dim)
        for model, dim in executor.execute(f"SELECT DISTINCT model, dim FROM {table}").fetchall()
    }
    keep = {index.name for index in current}
    for (name,) in executor.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?", (table,)
    ).fetchall():
        if name.startswith(f"{table}_hnsw_") and name not in keep:
            executor.execute(f'DROP INDEX "{name}"')
    for index in current:
        build_hnsw(executor, index)


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form of ``vector``: ``[x1,x2,...]`` with every float32 digit kept."""
    return "[" + ",".join(repr(float(x)) for x in vector.astype(np.float32)) + "]"


class PostgresMessageVectors:
    """Embeddings of archived messages for one model, kept in PostgreSQL and searched within one scope."""

    def __init__(
        self, embedder: Embedder, database: PostgresDatabase, *, scope: Scope, embed_at_search: bool = True
    ) -> None:
        """``scope`` is the archive's: :meth:`search` finds only its messages. Embedding covers every scope's
        messages (they share one table and one index)."""
        self.embedder = embedder
        self.scope = scope
        # As for the SQLite archive's vectors: off where something else embeds new messages.
        self.embed_at_search = embed_at_search
        self._database = database
        self._embedded_upto = 0  # every message with an id at or below this has a vector of this model
        self._lock = threading.Lock()
        self._indexed = False
        self._index = hnsw_index("message_vectors", "embedding", embedder.name, embedder.dim)

    def pending(self) -> int:
        """How many messages have no vector of this model yet."""
        with self._database.read() as executor:
            return executor.execute(
                f"SELECT COUNT(*) {_PENDING}", (0, self.embedder.name, self.embedder.dim)
            ).fetchone()[0]

    def catch_up(self) -> None:
        """Before a search: embed a bounded batch of messages that have no vector yet (unless
        ``embed_at_search`` is off)."""
        if self.embed_at_search:
            self.embed_pending(EMBED_PER_SEARCH)

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed messages that have no vector of this model yet, oldest first; returns how many."""
        embedder = self.embedder
        done = 0
        with self._lock:
            self._ensure_index()
            while limit is None or done < limit:
                want = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
                with self._database.read() as executor:
                    rows = executor.execute(
                        f"SELECT m.id, m.content {_PENDING} ORDER BY m.id LIMIT ?",
                        (self._embedded_upto, embedder.name, embedder.dim, want),
                    ).fetchall()
                if not rows:
                    break
                vectors = np.asarray(embedder.embed([r[1] for r in rows]), dtype=np.float32)
                if vectors.shape != (len(rows), embedder.dim):
                    raise ValueError(
                        f"embedder {embedder.name!r} returned shape {vectors.shape}, expected {(len(rows), embedder.dim)}"
                    )
                values = [(r[0], embedder.name, embedder.dim, vector_text(v), r[0]) for r, v in zip(rows, vectors)]

                def store(executor: Executor, values: list[tuple[object, ...]] = values) -> None:
                    # A message deleted meanwhile must not get an orphan vector.
                    executor.executemany(
                        "INSERT INTO message_vectors (message_id, model, dim, embedding)"
                        " SELECT ?, ?, ?, CAST(? AS vector) WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)"
                        " ON CONFLICT (message_id) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
                        " embedding = excluded.embedding",
                        values,
                    )

                self._database.write(store)
                self._embedded_upto = rows[-1][0]
                done += len(rows)
                if len(rows) < want:
                    break
        return done

    def _ensure_index(self) -> None:
        if self._indexed:
            return
        self._database.write(lambda executor: build_hnsw(executor, self._index))
        self._indexed = True

    def search(self, conn: Executor, query: str, k: int, roles: Collection[str] = ()) -> list[tuple[int, float]]:
        """The ``k`` messages of this scope most similar to ``query`` as ``(message_id, cosine)``, best first,
        among those with one of ``roles`` when given (the caller still drops those its other filters leave
        out)."""
        if not query.strip() or k <= 0:
            return []
        probe = vector_text(query_vectors_of(self.embedder).start(self.embedder, query).result().reshape(-1))
        wider = k > EF_SEARCH  # a walk keeping fewer candidates than asked for would return fewer
        if wider:
            conn.execute(f"SET hnsw.ef_search = {int(k)}")
        try:
            index = self._index
            # The scope is read from the sessions (not the messages' copy of it), which the planner can reach
            # through their scope index: for a scope holding a small share of the rows it scores that scope's
            # vectors exactly (500 of 100,000: 1.3 ms), where the messages' columns alone offer only a scan of
            # every message (16 ms). For a large share it walks the HNSW index, going on past other scopes'
            # vectors until it has k of this one (hnsw.iterative_scan, set on every connection).
            # The roles are part of the walk for the same reason: tool output filtered out afterwards would take
            # the places of the spoken messages recall asks for.
            among = f" AND m.role IN ({','.join('?' * len(roles))})" if roles else ""
            rows = conn.execute(
                f"SELECT message_id, 1 - ({index.full} <=> CAST(? AS vector)) FROM message_vectors WHERE {index.rows}"
                " AND EXISTS (SELECT 1 FROM messages m JOIN sessions s ON s.id = m.session_id"
                f" WHERE m.id = message_vectors.message_id AND {SESSION_SCOPE_CLAUSE}{among})"
                f" ORDER BY {index.order} <=> CAST(? AS halfvec) LIMIT ?",
                (probe, *self.scope.as_params(), *roles, probe, k),
            ).fetchall()
        finally:
            if wider:  # the connection goes back to the pool: its next search walks as configured
                conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        # relaxed_order (see mnemo.backends.postgres.connection) may return near-ties out of order.
        return sorted(((int(mid), float(cosine)) for mid, cosine in rows), key=lambda hit: -hit[1])

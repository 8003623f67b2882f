"""The archive's vector channel: message embeddings stored in ``message_vectors``, searched in memory.

Used only when a :class:`~mnemo.archive.SessionArchive` is given an embedder. Messages are embedded lazily
and in bounded batches (at search time, or all at once by :meth:`MessageVectors.embed_pending`), so appending
stays as fast as without vectors; a message not embedded yet is still found by full text. SQLite is the truth;
the in-memory index catches up on vectors written by any process by reading rows with a higher ``seq``.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING

import numpy as np

from .. import _db
from ..embeddings.index import BruteForceIndex

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder

# Bounds the embedding work one search may do; the rest waits for the next search or embed_pending().
EMBED_PER_SEARCH = 256
EMBED_BATCH = 64
# The messages after id ? with text and no vector of model ? and dim ?.
_PENDING = (
    "FROM messages m LEFT JOIN message_vectors v ON v.message_id = m.id"
    " WHERE m.id > ? AND m.content != '' AND (v.message_id IS NULL OR v.model != ? OR v.dim != ?)"
)


class MessageVectors:
    """Embeddings of archived messages for one model; the caller holds the connection's lock."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._index = BruteForceIndex(embedder.dim)
        self._seen = 0  # highest message_vectors.seq loaded into the index
        self._embedded_upto = 0  # every message with an id at or below this has a vector of this model
        self._lock = threading.Lock()

    def pending(self, conn: sqlite3.Connection) -> int:
        """How many messages have no vector of this model yet."""
        with self._lock:
            return conn.execute(f"SELECT COUNT(*) {_PENDING}", (0, self.embedder.name, self.embedder.dim)).fetchone()[0]

    def embed_pending(self, conn: sqlite3.Connection, limit: int | None = None) -> int:
        """Embed messages that have no vector of this model yet, oldest first; returns how many."""
        embedder = self.embedder
        done = 0
        with self._lock:
            while limit is None or done < limit:
                want = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
                rows = conn.execute(
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
                with _db.write_transaction(conn):
                    # A message deleted meanwhile must not get an orphan vector.
                    conn.executemany(
                        "INSERT OR REPLACE INTO message_vectors (message_id, model, dim, vector)"
                        " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
                        [(r[0], embedder.name, embedder.dim, v.tobytes(), r[0]) for r, v in zip(rows, vectors)],
                    )
                self._embedded_upto = rows[-1][0]
                done += len(rows)
                if len(rows) < want:
                    break
        return done

    def search(self, conn: sqlite3.Connection, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` messages most similar to ``query`` as ``(message_id, cosine)``, best first (unfiltered:
        deleted or filtered-out messages are dropped by the caller)."""
        if not query.strip() or k <= 0:
            return []
        self.embed_pending(conn, EMBED_PER_SEARCH)
        self._catch_up(conn)
        probe = np.asarray(self.embedder.embed([query]), dtype=np.float32).reshape(1, self.embedder.dim)
        return [(int(i), s) for i, s in self._index.search(probe, k)]

    def _catch_up(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            rows = conn.execute(
                "SELECT seq, message_id, vector FROM message_vectors WHERE seq > ? AND model = ? AND dim = ?"
                " ORDER BY seq",
                (self._seen, self.embedder.name, self.embedder.dim),
            ).fetchall()
            if not rows:
                return
            latest = {r[1]: r[2] for r in rows}
            matrix = np.frombuffer(b"".join(latest.values()), dtype=np.float32).reshape(len(latest), self.embedder.dim)
            self._index.add(list(latest), matrix)
            self._seen = rows[-1][0]

    def forget(self, message_ids: list[int]) -> None:
        """Drop deleted messages from the in-memory index; their ids may be reused by new messages, which
        must then be embedded afresh."""
        if not message_ids:
            return
        with self._lock:
            self._index.remove(message_ids)
            self._embedded_upto = min(self._embedded_upto, min(message_ids) - 1)

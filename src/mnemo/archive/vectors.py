"""The archive's vector channel: message embeddings stored in ``message_vectors``, searched from a file per scope.

Used only when a :class:`~mnemo.backends.sqlite.archive.SessionArchive` is given an embedder. Messages are embedded lazily
and in bounded batches (at search time unless ``embed_at_search`` is off, or by
:meth:`MessageVectors.embed_pending`, which runs the model without holding the connection, so searches go on
meanwhile), so appending stays as fast as without vectors; a message not embedded yet is still found by full
text. SQLite is the truth;
the vectors of the model are searched from a memory-mapped vector file beside the database (see
:mod:`mnemo.embeddings.synced`), caught up on vectors written by any process by reading rows with a higher
``seq``, so a new process does not read them all from SQLite before its first search.

Each scope (see :mod:`mnemo.scope`) has files of its own, as the graph's do: searched together, the
nearest messages of a home shared by many users are mostly other users', and a reader's own were left
out of the channel once they were filtered away. For the same reason a scope's spoken messages (what recall
asks for) and the rest (tool output, instructions) are kept in two files, searched by the roles asked for.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import _db
from ..embeddings.queries import query_vectors_of
from ..embeddings.synced import SyncedVectors, owners_of, table_top
from ..embeddings.vector_file import file_name
from ..scope import Scope
from .records import SPOKEN_ROLES
from .search import SESSION_SCOPE_CLAUSE

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
_SPOKEN_MARKS = ",".join("?" * len(SPOKEN_ROLES))


@dataclass(frozen=True, slots=True)
class MessageVectorSource:
    """The ``message_vectors`` rows of one scope and model (a :class:`~mnemo.embeddings.synced.VectorSource`):
    those of spoken messages (:data:`~mnemo.archive.records.SPOKEN_ROLES`) or, with ``spoken`` false, the rest
    (tool output, instructions)."""

    scope: Scope
    model: str
    dim: int
    spoken: bool = True

    @property
    def key(self) -> str:
        part = "spoken" if self.spoken else "unspoken"
        return "\x1f".join(("archive", *self.scope.as_params(), self.model, str(self.dim), part))

    def rows_after(self, conn: sqlite3.Connection, seq: int) -> list[tuple[int, Hashable, bytes]]:
        return conn.execute(
            # CROSS JOIN fixes the loop order: walk the new vectors by seq, then check each one's scope.
            "SELECT v.seq, v.message_id, v.vector FROM message_vectors v CROSS JOIN messages m ON m.id = v.message_id"
            f" CROSS JOIN sessions s ON s.id = m.session_id WHERE v.seq > ? AND v.model = ? AND v.dim = ?"
            f" AND {SESSION_SCOPE_CLAUSE} AND m.role {'' if self.spoken else 'NOT '}IN ({_SPOKEN_MARKS})"
            " ORDER BY v.seq",
            (seq, self.model, self.dim, *self.scope.as_params(), *SPOKEN_ROLES),
        ).fetchall()

    def top(self, conn: sqlite3.Connection) -> int:
        return table_top(conn, "message_vectors")

    def owners(self, conn: sqlite3.Connection, seqs: Sequence[int]) -> dict[int, Hashable]:
        return owners_of(conn, "message_vectors", "message_id", seqs)


class MessageVectors:
    """Embeddings of archived messages for one model, searched within one scope from a vector file under
    ``directory`` (in memory when it is None); the caller holds the connection's lock.

    Embedding is not confined to the scope: :meth:`embed_pending` embeds every message that waits, whoever's.
    """

    def __init__(
        self,
        embedder: Embedder,
        directory: Path | None = None,
        *,
        scope: Scope | None = None,
        embed_at_search: bool = True,
    ) -> None:
        self.embedder = embedder
        self.directory = directory
        self.scope = scope if scope is not None else Scope()
        if directory is not None:
            # Files nothing reads any more: every scope's vectors in one (before files were per scope), and a
            # scope's of every role in one (before tool output had a file of its own).
            model = (embedder.name, str(embedder.dim))
            for retired in (("archive", *model), ("archive", *self.scope.as_params(), *model)):
                (directory / file_name("\x1f".join(retired))).unlink(missing_ok=True)
        # Off where something else embeds new messages (an agent's archive does after each turn): a search
        # then never waits on a backlog.
        self.embed_at_search = embed_at_search
        self._partitions = self._partitioned(embedder.name, embedder.dim)
        self._embedded_upto = 0  # every message with an id at or below this has a vector of this model
        self._lock = threading.Lock()

    def pending(self, conn: sqlite3.Connection) -> int:
        """How many messages have no vector of this model yet."""
        with self._lock:
            return conn.execute(f"SELECT COUNT(*) {_PENDING}", (0, self.embedder.name, self.embedder.dim)).fetchone()[0]

    def _partitioned(self, model: str, dim: int) -> tuple[SyncedVectors, SyncedVectors]:
        """The spoken messages' vectors and the rest's, apart: a tool-using agent's tool output often outnumbers
        what was said, and searched together it would take the nearest places recall asks for."""
        sources = (
            MessageVectorSource(self.scope, model, dim, spoken=True),
            MessageVectorSource(self.scope, model, dim, spoken=False),
        )
        return tuple(
            SyncedVectors(source, None if self.directory is None else self.directory / file_name(source.key))
            for source in sources
        )  # type: ignore[return-value]

    def embed_pending(
        self, connection: Callable[[], AbstractContextManager[sqlite3.Connection]], limit: int | None = None
    ) -> int:
        """Embed messages that have no vector of this model yet, oldest first; returns how many. The SQL
        runs while ``connection()`` is held, the model between those steps, so other work on the connection
        (searches) goes on while a batch is embedded."""
        embedder = self.embedder
        done = 0
        with self._lock:
            while limit is None or done < limit:
                want = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
                with connection() as conn:
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
                with connection() as conn:
                    self._store(conn, rows, vectors)
                self._embedded_upto = rows[-1][0]
                done += len(rows)
                if len(rows) < want:
                    break
        return done

    def _store(self, conn: sqlite3.Connection, rows: list[tuple[int, str]], vectors: np.ndarray) -> None:
        embedder = self.embedder
        with _db.write_transaction(conn):
            replaced = [
                row for r in rows
                for row in conn.execute("SELECT seq, model, dim FROM message_vectors WHERE message_id = ?", (r[0],))
            ]  # fmt: skip
            # A message deleted meanwhile must not get an orphan vector.
            conn.executemany(
                "INSERT OR REPLACE INTO message_vectors (message_id, model, dim, vector)"
                " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
                [(r[0], embedder.name, embedder.dim, v.tobytes(), r[0]) for r, v in zip(rows, vectors)],
            )
        # Another model's vectors are gone from the database: erase them from its file too.
        self._erase(conn, replaced)

    def search(
        self, conn: sqlite3.Connection, query: str, k: int, roles: Collection[str] = ()
    ) -> list[tuple[int, float]]:
        """The ``k`` messages of the scope most similar to ``query`` as ``(message_id, cosine)``, best first,
        among those with one of ``roles`` when given (not filtered otherwise: deleted or filtered-out messages
        are dropped by the caller). Spoken and other roles are searched apart, so asking for one kind is never
        crowded out by the other; within a kind (``("user",)`` alone), the caller filters."""
        if not query.strip() or k <= 0:
            return []
        if self.embed_at_search:
            self.embed_pending(lambda: nullcontext(conn), EMBED_PER_SEARCH)
        asked = set(roles)
        spoken, unspoken = self._partitions
        searched = [
            part for part, wanted in ((spoken, asked & set(SPOKEN_ROLES)), (unspoken, asked - set(SPOKEN_ROLES)))
            if wanted or not asked
        ]  # fmt: skip
        probe = query_vectors_of(self.embedder).start(self.embedder, query)
        for part in searched:
            part.refresh(conn)
        hits: list[tuple[int, float]] = []
        for part in searched:
            hits += [(int(i), s) for i, s in part.search(conn, probe.result(), k)]  # type: ignore[call-overload]
        return hits if len(searched) == 1 else sorted(hits, key=lambda hit: -hit[1])[:k]

    def forget(self, conn: sqlite3.Connection, message_ids: list[int], vectors: Iterable[tuple[int, str, int]]) -> None:
        """Erase the vectors (``(seq, model, dim)``) of deleted messages, after the delete committed; their
        ids may be reused by new messages, which must then be embedded afresh."""
        if message_ids:
            with self._lock:
                self._embedded_upto = min(self._embedded_upto, min(message_ids) - 1)
        self._erase(conn, vectors)

    def _erase(self, conn: sqlite3.Connection, vectors: Iterable[tuple[int, str, int]]) -> None:
        by_model: dict[tuple[str, int], list[int]] = {}
        for seq, model, dim in vectors:
            by_model.setdefault((model, dim), []).append(seq)
        for (model, dim), seqs in by_model.items():
            same = (model, dim) == (self.embedder.name, self.embedder.dim)
            # A vector's seq does not say which partition holds it; erasing rows a file lacks leaves it as it is.
            for part in self._partitions if same else self._partitioned(model, dim):
                part.erase(conn, seqs)

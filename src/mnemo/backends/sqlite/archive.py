"""``SessionArchive``: every message of every session in SQLite, searchable in milliseconds.

One archive object owns one connection, guarded by a lock so the provider's hook threads can share
it. Any number of processes may open the same file: writes are immediate transactions with retries
(:mod:`mnemo._db`), so no write is lost and readers never see half a batch. What the archive does lives
in :class:`~mnemo.archive.base.Archive`; this module is how SQLite does it (FTS5 indexes, a vector file).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ... import _db
from ...archive import schema
from ...archive.base import Archive, SessionNotFound
from ...archive.records import MessageRow, require_encodable
from ...archive.search import OtherScopes, Searcher
from ...archive.vectors import MessageVectors
from ...database import connect_owned
from ...embeddings.vector_file import directory_for
from ...errors import InvalidArgument, MnemoError
from ...scope import Scope

if TYPE_CHECKING:
    from ...embeddings.protocol import Embedder

__all__ = ["SessionArchive", "SessionNotFound"]

log = logging.getLogger("mnemo.archive")

T = TypeVar("T")


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc).lower()
    return code == getattr(sqlite3, "SQLITE_CORRUPT", 11) or "malformed" in text or "corrupt" in text


class SessionArchive(Archive):
    """The archive of sessions and their messages in one SQLite file (normally ``MNEMO_HOME/mnemo.db``),
    seen from one scope."""

    def __init__(
        self, path: str | Path, *, embedder: Embedder | None = None, scope: Scope | None = None, embed_at_search: bool = True
    ) -> None:
        """``embedder`` adds a vector channel to relevance search (messages are embedded lazily, in bounded
        batches per search unless ``embed_at_search`` is off, or by :meth:`embed_pending`); without one search
        is full text only.
        ``scope`` (default: the empty scope) is whose sessions this object writes and reads.

        A file that is not mnemo's, or was written by a newer mnemo, is refused before anything is written
        (:class:`~mnemo.database.ForeignDatabase`, :class:`~mnemo.database.DatabaseTooNew`)."""
        self.path = Path(path)
        self.location = str(self.path)
        self.scope = scope if scope is not None else Scope()
        self._lock = threading.RLock()
        self._other_scopes = OtherScopes(self.scope)
        self._conn: sqlite3.Connection | None = connect_owned(self.path)
        try:
            _db.migrate(self._conn, schema.COMPONENT, schema.MIGRATIONS)
            self._trigram = schema.cjk_tokenizer(self._conn) == "trigram"
        except BaseException:
            self._conn.close()
            self._conn = None
            raise
        # Only once the file is known to be mnemo's: the vectors tidy their directory beside it.
        self._vectors = (
            MessageVectors(embedder, directory_for(self.path), scope=self.scope, embed_at_search=embed_at_search)
            if embedder is not None
            else None
        )

    _SESSION_ORDER = "s.rowid"

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._conn is None

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            if self._conn is not None:
                _db.close(self._conn)
                self._conn = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes made through this archive into one transaction: all of them land, or none.
        Other threads using the archive wait until it ends."""
        with self._lock, _db.write_transaction(self._db):
            yield

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock, _db.write_transaction(self._db) as conn:
            return work(conn)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._db

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MnemoError("the session archive is closed")
        return self._conn

    # -- the SQLite side of writing ----------------------------------------------------------------

    def _insert_messages(self, conn: sqlite3.Connection, session_id: str, rows: Sequence[MessageRow]) -> list[int]:
        first = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0] + 1
        # One INSERT ... SELECT for the whole batch: the FTS triggers then run inside a single
        # statement, so FTS5 flushes its pending terms once per batch instead of once per row
        # (several times faster than executemany).
        payload = json.dumps(
            [
                [first + i, session_id, r.role, r.content, r.parts, r.tool_name, r.tool_calls, r.tool_text,
                 r.tool_call_id, r.extra, r.created_at, r.has_cjk]
                for i, r in enumerate(rows)
            ],
            ensure_ascii=False,
        )
        try:
            payload.encode("utf-8")
        except UnicodeEncodeError:
            # Rare: find the message and field at fault only when the batch as a whole fails.
            for index, row in enumerate(rows):
                try:
                    require_encodable(row)
                except InvalidArgument as exc:
                    raise InvalidArgument(f"messages[{index}].{exc.field.removeprefix('message.')}", exc.problem) from None
            raise InvalidArgument("session_id", "contains invalid Unicode") from None
        columns = ", ".join(f"json_extract(value, '$[{n}]')" for n in range(12))
        conn.execute(
            "INSERT INTO messages (id, session_id, role, content, parts, tool_name, tool_calls, tool_text,"
            f" tool_call_id, extra, created_at, has_cjk) SELECT {columns} FROM json_each(?) ORDER BY key",
            (payload,),
        )
        return list(range(first, first + len(rows)))

    def _doomed_vectors(
        self, conn: sqlite3.Connection, session_id: str, message_id: int | None = None
    ) -> list[tuple[int, str, int]]:
        one = "" if message_id is None else " AND m.id = ?"
        return conn.execute(
            "SELECT v.seq, v.model, v.dim FROM message_vectors v JOIN messages m ON m.id = v.message_id"
            f" WHERE m.session_id = ?{one}",
            (session_id,) if message_id is None else (session_id, message_id),
        ).fetchall()

    def _forget_vectors(self, message_ids: list[int], doomed: list[tuple[int, str, int]]) -> None:
        if self._vectors is not None:
            with self._lock:
                self._vectors.forget(self._db, message_ids, doomed)

    # -- search ------------------------------------------------------------------------------------

    def _read_index(self, work: Callable[[Searcher], T]) -> T:  # type: ignore[override]
        # A damaged full-text index must not make search fail: rebuild it from the messages and retry once.
        with self._lock:
            shared = self._other_scopes.present(self._db)
            searcher = Searcher(self._db, trigram=self._trigram, scope=self.scope, shared=shared, vectors=self._vectors)
            try:
                return work(searcher)
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise _db.DatabaseError(f"search failed: {exc}") from exc
                log.warning("%s: full-text index damaged (%s); rebuilding it from the messages", self.path, exc)
                self.rebuild_index()
                return work(searcher)

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed messages that have no vector of the archive's embedder yet (all of them, or at most
        ``limit``), oldest first; returns how many (0 without an embedder)."""
        if self._vectors is None:
            return 0
        return self._vectors.embed_pending(self._reading, limit)

    def pending_embeddings(self) -> int | None:
        """How many messages still wait for a vector; ``None`` without an embedder."""
        if self._vectors is None:
            return None
        with self._lock:
            return self._vectors.pending(self._db)

    # -- index health ------------------------------------------------------------------------------

    def check_index(self, *, repair: bool = True) -> bool:
        """Verify the full-text indexes against the messages; rebuild them when damaged (and ``repair``).

        Returns True when the indexes were healthy.
        """
        with self._lock:
            try:
                for table in schema.FTS_TABLES:
                    self._db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
                return True
            except sqlite3.DatabaseError as exc:
                log.warning("%s: full-text index check failed (%s)", self.path, exc)
                if repair:
                    self.rebuild_index()
                return False

    def rebuild_index(self) -> None:
        """Regenerate both full-text indexes from the messages table, in place and atomically."""
        with self._lock, _db.write_transaction(self._db) as conn:
            for table in schema.FTS_TABLES:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")

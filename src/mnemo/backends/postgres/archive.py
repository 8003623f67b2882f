"""``PostgresArchive``: the session archive in PostgreSQL, for several hosts sharing one memory.

It behaves exactly as :class:`~mnemo.backends.sqlite.archive.SessionArchive` (the behaviour is written once in
:class:`~mnemo.archive.base.Archive`); what differs is the engine: a pooled connection per call instead of
one locked connection, message ids from an identity column, full text from a ``tsvector`` column and vectors
from pgvector (:mod:`mnemo.backends.postgres.search`, :mod:`mnemo.backends.postgres.vectors`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from ...archive.base import Archive
from ...archive.records import MessageRow, require_encodable
from ...database import table_owner
from ...errors import InvalidArgument
from ...scope import Scope
from . import archive_schema
from .connection import Executor, PostgresDatabase, redact
from .search import PostgresSearcher
from .text_search import TermStatistics
from .vectors import PostgresMessageVectors

if TYPE_CHECKING:
    from ...embeddings.protocol import Embedder

T = TypeVar("T")

_INSERT = (
    "INSERT INTO messages (id, session_id, role, content, parts, tool_name, tool_calls, tool_text, tool_call_id,"
    " extra, created_at, has_cjk) SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[],"
    " ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::float8[], ?::integer[])"
)


class PostgresArchive(Archive):
    """The archive of sessions and their messages in a PostgreSQL database, seen from one scope."""

    _SESSION_ORDER = "s.seq"

    def __init__(
        self, url: str, *, embedder: Embedder | None = None, scope: Scope | None = None, embed_at_search: bool = True
    ) -> None:
        """``url`` is a ``postgresql://`` URL; ``embedder``, ``scope`` and ``embed_at_search`` as for
        :class:`~mnemo.backends.sqlite.archive.SessionArchive`. The schema is created or migrated on first use; a schema
        holding tables that are not mnemo's is refused before anything is written."""
        self.url = url
        self.location = redact(url)
        self.scope = scope if scope is not None else Scope()
        self._database: PostgresDatabase | None = PostgresDatabase.shared(url)
        self._local = threading.local()
        try:
            self._database.migrate(archive_schema.COMPONENT, archive_schema.MIGRATIONS, lambda t: table_owner(t) is not None)
        except BaseException:
            self.close()
            raise
        self._vectors = (
            PostgresMessageVectors(embedder, self._database, scope=self.scope, embed_at_search=embed_at_search)
            if embedder is not None
            else None
        )
        self._terms = TermStatistics("messages", "id")

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._database is None

    def close(self) -> None:
        if self._database is not None:
            database, self._database = self._database, None
            database.release()

    @property
    def _db(self) -> PostgresDatabase:
        if self._database is None:
            from ...errors import MnemoError

            raise MnemoError("the session archive is closed")
        return self._database

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes made through this archive on this thread into one transaction: all of them land, or
        none. Reads on this thread inside the block see its uncommitted writes."""
        if getattr(self._local, "executor", None) is not None:
            yield  # already inside one: the outer block commits
            return
        with self._db.read() as executor:
            executor.execute("BEGIN")
            self._local.executor = executor
            try:
                yield
            except BaseException:
                if not executor.connection.broken:
                    executor.execute("ROLLBACK")
                raise
            else:
                executor.execute("COMMIT")
            finally:
                self._local.executor = None

    def _write(self, work: Callable[[Executor], T]) -> T:
        open_transaction = getattr(self._local, "executor", None)
        if open_transaction is None:
            return self._db.write(work)
        # Inside transaction(): a savepoint, so a refused write undoes only itself.
        open_transaction.execute("SAVEPOINT mnemo_nested")
        try:
            result = work(open_transaction)
        except BaseException:
            open_transaction.execute("ROLLBACK TO SAVEPOINT mnemo_nested")
            raise
        open_transaction.execute("RELEASE SAVEPOINT mnemo_nested")
        return result

    @contextmanager
    def _reading(self) -> Iterator[Executor]:
        # Nested readings on one thread share the outer one's connection: taking one from the pool checks it
        # with a round trip, and a search reads in about eight steps.
        held = getattr(self._local, "executor", None) or getattr(self._local, "reader", None)
        if held is not None:
            yield held
            return
        with self._db.read() as executor:
            self._local.reader = executor
            try:
                yield executor
            finally:
                self._local.reader = None

    # -- the PostgreSQL side of writing ------------------------------------------------------------

    def _insert_messages(self, conn: Executor, session_id: str, rows: Sequence[MessageRow]) -> list[int]:
        for index, row in enumerate(rows):
            try:
                require_encodable(row)
            except InvalidArgument as exc:
                raise InvalidArgument(f"messages[{index}].{exc.field.removeprefix('message.')}", exc.problem) from None
            _refuse_nul(row, index)
        ids = [r[0] for r in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('messages', 'id')) FROM generate_series(1, ?) ORDER BY 1",
            (len(rows),),
        ).fetchall()]  # fmt: skip
        columns = [
            ids, [session_id] * len(rows), [r.role for r in rows], [r.content for r in rows], [r.parts for r in rows],
            [r.tool_name for r in rows], [r.tool_calls for r in rows], [r.tool_text for r in rows],
            [r.tool_call_id for r in rows], [r.extra for r in rows], [r.created_at for r in rows],
            [int(r.has_cjk) for r in rows],
        ]  # fmt: skip
        conn.execute(_INSERT, columns)
        return ids

    # -- search ------------------------------------------------------------------------------------

    def _read_index(self, work: Callable[[PostgresSearcher], T]) -> T:  # type: ignore[override]
        if self._vectors is not None:
            self._vectors.catch_up()
        with self._reading() as executor:
            return work(PostgresSearcher(executor, self._terms, scope=self.scope, vectors=self._vectors))

    def embed_pending(self, limit: int | None = None) -> int:
        return 0 if self._vectors is None else self._vectors.embed_pending(limit)

    def pending_embeddings(self) -> int | None:
        return None if self._vectors is None else self._vectors.pending()

    # -- index health ------------------------------------------------------------------------------

    def check_index(self, *, repair: bool = True) -> bool:
        """PostgreSQL keeps the ``tsvector`` column and its index in step with every write, in the same
        transaction; there is no separate index to drift. Returns True."""
        return True

    def rebuild_index(self) -> None:
        """Rebuild the full-text and trigram indexes (``REINDEX``), for a server that reported one damaged."""
        with self._db.read() as executor:
            executor.execute("REINDEX INDEX messages_search")
            executor.execute("REINDEX INDEX messages_trigram")


def _refuse_nul(row: MessageRow, index: int) -> None:
    # PostgreSQL text cannot hold U+0000 (SQLite can); refused with its field named rather than stored altered.
    for name in ("content", "parts", "tool_name", "tool_calls", "tool_text", "tool_call_id", "extra"):
        value = getattr(row, name)
        if isinstance(value, str) and "\x00" in value:
            raise InvalidArgument(f"messages[{index}].{name}", "contains a NUL character, which PostgreSQL cannot store")
